// Package canary compares two results.json (Compare): the arm taken from
// each file becomes baseline and candidate of one result, analysed with the
// decision rule against the first run's own A/A resolution (from its own
// blocks, as its report gives it: the runs were not interleaved), with the differences
// in trace, config and provenance that make the comparison less than the
// arms' alone listed as warnings.
//
// It reads report's schema and uses analysis for the statistics; it renders
// nothing and does not know how either run was made.
package canary
