// Package render prints a results.json (report.Results) as report.md
// (markdown.go, tables.go) and a self-contained report.html with inline SVG
// charts from gonum/plot (html.go, plots.go; no script, no network), with
// the answer block (answer.go) and the one-line headline (headline.go).
//
// It prints what analysis put in the results; it does not know how records
// were made or how a run was compared.
package render
