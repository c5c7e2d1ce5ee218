// Package treceval scores an existing TREC run file against qrels with the
// metric definitions of SPEC §4 (SPEC §6.7, `vertebrae retrieval
// evaluate-run`), a side entry that skips extraction and ranking: the run's
// candidate lists take the place of rank's, and the metrics (package
// metrics) go into a result (package results) like a ranked run's.
//
// A run line is `qid Q0 docid rank score tag`, fields separated by white
// space; the Q0 column is ignored. Blank lines and lines whose first field
// starts with '#' are skipped, as in TREC qrels files. The candidate list of
// a query is the documents its run lines list. They are ordered by
// descending score; equal scores are ordered
//
//   - TiesTREC (default): by document ID in descending byte order, the
//     convention of trec_eval;
//   - TiesRank: by the rank column ascending, and documents whose score and
//     rank are both equal by document ID descending, so the result never
//     depends on the order of lines within a query.
//
// Streaming: the run is read once, query by query, and memory is
// O(qrels + one query's run lines), plus one string per run query that the
// qrels do not know (to count them). Each query's lines must therefore be
// contiguous: a query whose lines resume after another query's fails,
// naming the line. Runs written by vertebrae, trec_eval tooling and most
// retrieval systems are grouped this way; any other run can be grouped with
// `LC_ALL=C sort -s -k1,1`.
//
// Evaluated queries, missing queries and positives, and the warnings are
// those of SPEC §6.7; see Evaluate.
package treceval
