// Package msgfmt is a shared helper of every user-facing message (file
// readers, dataset, scorer, evaluation, CLI): it formats the pieces that
// SPEC §1.3 fixes, IDs as JSON string literals and bounded preview lists.
package msgfmt
