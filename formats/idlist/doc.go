// Package idlist is the single-format reader of ID files (SPEC §6.4.2) and
// text/JSONL label files (§6.4.4) under formats/files and runspec. IDs and
// labels are kept byte-exactly: only the line terminator is removed. Errors
// are *formats.Error values naming the file and line.
package idlist
