// Package numfmt is a shared helper of the output writers (results, report,
// qrels) that formats numbers the way every vertebrae output does: the
// shortest decimal that round-trips, laid out exactly as encoding/json
// writes a float (SPEC §1.3), so JSON, CSV and TREC files agree digit for
// digit.
package numfmt
