package canary

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"reflect"
)

// Differences lists what makes two results.json unfit for a like-for-like
// comparison: schema, trace (hash, format, rows: the trace is identified by
// its content, so the same file at another path compares), config hash, SLO,
// whether they were simulated, and the offered loads swept. Empty means
// comparable. Each entry reads "field: A=…, B=…"; the config hash's entry
// goes on to name the config keys that differ (report.ConfigKeyDiffs).
func Differences(a, b report.Results) []string {
	var d []string
	diff := func(field string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			d = append(d, fmt.Sprintf("%s: A=%v, B=%v", field, x, y))
		}
	}
	diff("schema_version", a.SchemaVersion, b.SchemaVersion)
	diff("trace.sha256", a.Trace.SHA256, b.Trace.SHA256)
	diff("trace.format", a.Trace.Format, b.Trace.Format)
	diff("trace.rows", a.Trace.Rows, b.Trace.Rows)
	n := len(d)
	diff("manifest.config_sha256", a.Manifest.ConfigSHA256, b.Manifest.ConfigSHA256)
	if len(d) > n {
		if k := report.ConfigKeyDiffs(a, b); len(k) > 0 {
			d[len(d)-1] += "; config keys that differ: " + strings.Join(k, "; ")
		}
	}
	diff("slo", a.SLO, b.SLO)
	diff("simulated", a.Simulated, b.Simulated)
	diff("offered_loads_rps", report.LoadsOf(a), report.LoadsOf(b))
	return d
}

// Provenance lists where two results came from different commits,
// configs, traces, servers, Go versions or machines: "commits (A=…, B=…)";
// the configs' entry names the keys that differ (report.ConfigKeyDiffs).
// Unlike Differences these do not refuse a comparison (a canary is a new
// build by design), but a difference between the runs includes them.
func Provenance(a, b report.Results) []string {
	var d []string
	diff := func(field string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			d = append(d, fmt.Sprintf("%s (A=%v, B=%v)", field, report.OrText(fmt.Sprint(x), "not recorded"), report.OrText(fmt.Sprint(y), "not recorded")))
		}
	}
	if a.Manifest.GitCommit != "" && b.Manifest.GitCommit != "" { // an unrecorded commit is said apart (unknownCommits)
		diff("commits", a.Manifest.GitCommit, b.Manifest.GitCommit)
	}
	n := len(d)
	diff("configs", report.Short(a.Manifest.ConfigSHA256), report.Short(b.Manifest.ConfigSHA256))
	if len(d) > n {
		if k := report.ConfigKeyDiffs(a, b); len(k) > 0 {
			d[len(d)-1] += ": " + strings.Join(k, "; ")
		}
	}
	diff("traces", report.Short(a.Trace.SHA256), report.Short(b.Trace.SHA256))
	diff("trace paths", a.Trace.Source, b.Trace.Source)
	diff("servers", serverKinds(a, b), serverKinds(b, a))
	diff("Go versions", a.Manifest.GoVersion, b.Manifest.GoVersion)
	diff("machines", a.Manifest.Machine, b.Manifest.Machine)
	return d
}

// SameRun says how a and b are known to be one run (one results.json given
// twice, or two copies of it), or "" when they are separate runs, with
// nothing in Provenance (commit, config sha256, trace, servers, machine)
// differing: the same run_id, which a run draws once, at random, as it
// starts (a resumed run keeps it, being that run finished; a merge of
// shards draws a new one); two runs started in the
// same instant differ there. A file with a run_id and one without are two
// runs. For files written before run_id, the same created_at (set once as
// the run starts) with the same config sha256 (Provenance); for files
// without either, every cell of both starting at the same recorded time.
func SameRun(a, b report.Results) string {
	if len(Provenance(a, b)) > 0 {
		return ""
	}
	if a.RunID != "" || b.RunID != "" {
		if a.RunID == b.RunID {
			return "the same run_id " + a.RunID + ", created " + a.CreatedAt.UTC().Format(time.RFC3339Nano)
		}
		return ""
	}
	if !a.CreatedAt.IsZero() || !b.CreatedAt.IsZero() {
		if a.CreatedAt.Equal(b.CreatedAt) {
			return "no run_id (written before it was recorded), both created " + a.CreatedAt.UTC().Format(time.RFC3339Nano) + " from the same config"
		}
		return ""
	}
	if len(a.Cells) == 0 || len(a.Cells) != len(b.Cells) {
		return ""
	}
	for i, c := range a.Cells {
		d := b.Cells[i]
		if c.StartedAt == nil || d.StartedAt == nil || !c.StartedAt.Equal(*d.StartedAt) || c.Arm != d.Arm {
			return ""
		}
	}
	return fmt.Sprintf("no created_at, and all %d cells started at the same recorded times", len(a.Cells))
}

// sameRunWarning says plainly what comparing one run with itself means,
// given how SameRun knew (how) and the arms taken from each side.
func sameRunWarning(how string, opts CompareOptions) string {
	s := "A and B are the same run (" + how + "), not two runs: "
	if opts.ArmA == opts.ArmB {
		return s + "arm " + opts.ArmA + " is compared with itself, so every ratio is exactly 1 by construction (its interval only the resampling's spread around 1) and NO DIFFERENCE here measures nothing. " +
			"A canary gate (compare --exit-code) given the same run twice would pass without testing the canary, so it exits non-zero instead: give it the production run as A and the canary's own run as B."
	}
	return s + "arms " + opts.ArmA + " and " + opts.ArmB + " were measured interleaved in one run, and this comparison resamples them as if they were independent runs; " +
		"the run's own report compares them paired, against its own A/A resolution, and is the one to read. It is no canary gate: that compares two separate runs."
}

// sameRunVerdicts restates each verdict of an arm compared with itself
// (one run given as A and B): its ratios are 1 by construction, so no line
// may read as a measured "0.00 % lower" that the run "can detect". The
// outcome stays (no difference), the summary, reason and deciding clause's
// detail say why.
func sameRunVerdicts(vs []report.Verdict, how, arm string) {
	why := fmt.Sprintf("A and B are the same run (%s): arm %s compared with itself, every ratio is 1 by construction; nothing was measured between two runs", how, arm)
	for i := range vs {
		v := &vs[i]
		v.Summary = "NO DIFFERENCE by construction, not measured: " + why
		v.Reason = why
		for j := range v.Clauses {
			if v.Clauses[j].Clause == v.DecidingClause {
				v.Clauses[j].Detail = why
			}
		}
	}
}

// armList is r's arms, in the order its cells first name them, comma-separated.
func armList(r report.Results) string {
	var arms []string
	for _, c := range r.Cells {
		if !slices.Contains(arms, c.Arm) {
			arms = append(arms, c.Arm)
		}
	}
	if len(arms) == 0 {
		return "none: it has no cells"
	}
	return strings.Join(arms, ", ")
}

// serverKinds is the server description of each arm of r that other also
// recorded, as recorded: "baseline: sim, candidate: sim".
func serverKinds(r, other report.Results) string {
	keys := slices.Sorted(maps.Keys(r.Manifest.Server))
	s := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, ok := other.Manifest.Server[k]; !ok {
			continue // an arm only one run has (e.g. its A/A replicate) is no server difference
		}
		if info, ok := r.Manifest.Server[k].(map[string]any); ok {
			s = append(s, fmt.Sprintf("%s: %v", k, info["kind"]))
		}
	}
	return strings.Join(s, ", ")
}

// CompareOptions picks the arms to compare and how.
type CompareOptions struct {
	// ArmA and ArmB name the arm taken from each file (default "baseline" for both).
	ArmA, ArmB string
	// NameA and NameB are the arms' names in the comparison (default "A:<arm>", "B:<arm>").
	NameA, NameB string
	// PathA and PathB are the files A and B were read from, named in the
	// comparison's Inputs (empty: "(path not given)").
	PathA, PathB string
	// Force compares even when Differences is not empty (they are kept in the result).
	Force bool
	// Rule decides; its Baseline is set to NameA.
	Rule report.DecisionRule
}

// Comparison is the outcome of Compare: a Results holding A's arm as the
// baseline and B's as the candidate, analysed, plus what differed.
type Comparison struct {
	Results     report.Results `json:"results"`
	Differences []string       `json:"differences,omitempty"`
	Forced      bool           `json:"forced,omitempty"`
	// SameRun says how A and B were found to be one run (SameRun); "" for
	// two runs. Results.Warnings then opens with what that means.
	SameRun string `json:"same_run,omitempty"`
}

// Compare is the canary comparison of two results made from the same trace
// and config (production vs canary, vendor claim vs re-measurement): A's arm
// is the baseline, B's the candidate, and the statistics and verdict are
// Analyze's. The two runs were not interleaved, so ratios resample the two
// sides independently. It refuses (error listing every difference) when
// Differences is not empty, unless opts.Force.
func Compare(a, b report.Results, opts CompareOptions) (Comparison, error) {
	if opts.ArmA == "" {
		opts.ArmA = report.DefaultBaseline
	}
	if opts.ArmB == "" {
		opts.ArmB = opts.ArmA
	}
	if opts.NameA == "" {
		opts.NameA = "A:" + opts.ArmA
	}
	if opts.NameB == "" {
		opts.NameB = "B:" + opts.ArmB
	}
	if opts.NameA == opts.NameB {
		return Comparison{}, fmt.Errorf("both arms are named %q", opts.NameA)
	}
	cmp := Comparison{Differences: Differences(a, b), Forced: opts.Force}
	if len(cmp.Differences) > 0 && !opts.Force {
		return cmp, fmt.Errorf("the results differ (use --force to compare anyway):\n  %s", joinLines(cmp.Differences))
	}
	// CreatedAt stays zero: a comparison's own creation time is the caller's
	// to set; each input's created_at is in Inputs, labelled A and B.
	out := report.Results{
		SchemaVersion: report.SchemaVersion,
		Inputs: []report.Input{
			{Label: "A", Path: opts.PathA, CreatedAt: a.CreatedAt, RunID: a.RunID, Arm: opts.ArmA, Name: opts.NameA, Complete: a.Complete},
			{Label: "B", Path: opts.PathB, CreatedAt: b.CreatedAt, RunID: b.RunID, Arm: opts.ArmB, Name: opts.NameB, Complete: b.Complete},
		},
		Simulated: a.Simulated || b.Simulated,
		Complete:  a.Complete && b.Complete,
		Manifest:  a.Manifest, Trace: a.Trace, SLO: a.SLO, Aliases: a.Aliases,
	}
	if !out.Complete {
		out.IncompleteReason = fmt.Sprintf("A: %s; B: %s", completeness(a), completeness(b))
	}
	out.Manifest.ArmOrder = []string{opts.NameA, opts.NameB}
	na, nb := 0, 0
	for _, c := range a.Cells {
		if c.Arm == opts.ArmA {
			c.Arm = opts.NameA
			out.Cells = append(out.Cells, c)
			na++
		}
	}
	// A's A/A replicate, when A ran one against the compared arm: the
	// comparison's resolution (two separate runs add the drift between
	// them, which neither run measured; Provenance says what differs).
	for _, c := range a.Cells {
		if c.Arm == report.AAArm(opts.ArmA) {
			c.Arm = report.AAArm(opts.NameA)
			out.Cells = append(out.Cells, c)
		}
	}
	for _, c := range b.Cells {
		if c.Arm == opts.ArmB {
			c.Arm = opts.NameB
			out.Cells = append(out.Cells, c)
			nb++
		}
	}
	if na == 0 || nb == 0 {
		var missing []string
		if na == 0 {
			missing = append(missing, fmt.Sprintf("arm %q is not in A (--arm-a; A's arms: %s)", opts.ArmA, armList(a)))
		}
		if nb == 0 {
			missing = append(missing, fmt.Sprintf("arm %q is not in B (--arm-b; B's arms: %s)", opts.ArmB, armList(b)))
		}
		return cmp, fmt.Errorf("%s", strings.Join(missing, "; "))
	}
	// The inputs' own warnings stay in their reports; a cell that lost more
	// than MaxNotOKShare of its requests is flagged again here, where it
	// refuses the comparison's figures.
	if cmp.SameRun = SameRun(a, b); cmp.SameRun != "" {
		out.Warnings = append(out.Warnings, sameRunWarning(cmp.SameRun, opts))
	}
	out.Warnings = append(out.Warnings, analysis.FailureWarnings(out.Cells)...)
	if p := Provenance(a, b); len(p) > 0 {
		out.Warnings = append(out.Warnings, "A and B came from different "+strings.Join(p, "; ")+": a difference measured between them is not the arms' alone")
	}
	if w := unknownCommits(a, b); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if !slices.ContainsFunc(a.Cells, func(c report.Cell) bool { return c.Arm == report.AAArm(opts.ArmA) }) {
		out.Warnings = append(out.Warnings, "A has no A/A replicate of "+opts.ArmA+" (resolution.aa_replicate was off, or an older run): the comparison's resolution is not measured, so no verdict can say a difference is within it")
	}
	out.Energy = renameEnergy(a.Energy, b.Energy, opts)
	out.Cost = renameCost(a.Cost, b.Cost, opts)
	notPart := "not carried into a comparison of two runs: see each run's own report"
	out.Amdahl = &report.AmdahlSection{NotMeasured: notPart}
	out.Validation = &report.ValidationSection{NotMeasured: notPart}
	out.Hook = &report.HookSection{NotMeasured: notPart}
	out.CapacitySearch = searchedCapacity(a, b, opts)
	rule := opts.Rule
	rule.Baseline = opts.NameA
	rule.Independent = true
	own, err := ownResolution(a, opts.ArmA, rule)
	if err != nil {
		return cmp, err
	}
	if err := analysis.AnalyzeAgainst(&out, rule, own); err != nil {
		return cmp, err
	}
	if cmp.SameRun != "" && opts.ArmA == opts.ArmB {
		sameRunVerdicts(out.Verdicts, cmp.SameRun, opts.ArmA)
	}
	cmp.Results = out
	return cmp, nil
}

// ownResolution is A's resolution against its arm armA as A's own analysis
// gives it under rule (its level, resamples and seed): the A/A replicate
// against armA, widened by the spread pooled over A's own blocks, every arm
// of A interleaved in one run. B's blocks were not interleaved with A's, so
// pooling them in would make the comparison's resolution depend on B (the
// promise of compare --exit-code is A's resolution). Empty when A has no
// A/A replicate of armA.
func ownResolution(a report.Results, armA string, rule report.DecisionRule) ([]report.Resolution, error) {
	if !slices.ContainsFunc(a.Cells, func(c report.Cell) bool { return c.Arm == report.AAArm(armA) }) {
		return nil, nil
	}
	own := report.Results{Complete: a.Complete, Manifest: a.Manifest, RunOrder: a.RunOrder, Cells: slices.Clone(a.Cells)}
	rule.Baseline, rule.Independent = armA, false
	if err := analysis.Analyze(&own, rule); err != nil {
		return nil, fmt.Errorf("canary: A's own resolution: %w", err)
	}
	return own.Stats.Resolution, nil
}

// searchedCapacity carries A's and B's capacity searches of the compared
// arms into the comparison: each arm's capacity as its own run's search
// found it, renamed, and B's gain over A (analysis.SearchGain), which the
// report, the console and the headline then state instead of the sweep's
// capacities (a sweep whose top load both arms met knows neither capacity).
// nil when neither run searched; NotRun says why when only one did, or a
// search did not run or did not search the compared arm. An arm whose
// capacity rests on client-bound misses (analysis.SuspectCapacity) is
// carried with no capacity, and the gain with it is not determined.
func searchedCapacity(a, b report.Results, opts CompareOptions) *report.CapacitySearch {
	ca, cb := a.CapacitySearch, b.CapacitySearch
	switch {
	case ca == nil && cb == nil:
		return nil
	case ca == nil || cb == nil:
		only, other := "A", "B"
		if cb != nil {
			only, other = "B", "A"
		}
		return &report.CapacitySearch{NotRun: fmt.Sprintf("only %s's run searched the capacity (%s's did not): searched capacities compare only when both runs searched", only, other)}
	case ca.NotRun != "":
		return &report.CapacitySearch{NotRun: "A's run did not search: " + ca.NotRun}
	case cb.NotRun != "":
		return &report.CapacitySearch{NotRun: "B's run did not search: " + cb.NotRun}
	case !reflect.DeepEqual(ca.SLO, cb.SLO):
		return &report.CapacitySearch{NotRun: "A's and B's searches judged different SLOs: their capacities do not compare"}
	}
	find := func(cs *report.CapacitySearch, arm, name, side string) (report.CapacityArm, string) {
		for _, x := range cs.Arms {
			if x.Arm == arm {
				x.Arm = name
				// A run written before suspect fail ends were flagged
				// still stores a figure for one: withhold it here too.
				return analysis.WithholdSuspect(x), ""
			}
		}
		return report.CapacityArm{}, fmt.Sprintf("%s's search has no arm %q", side, arm)
	}
	armA, whyA := find(ca, opts.ArmA, opts.NameA, "A")
	armB, whyB := find(cb, opts.ArmB, opts.NameB, "B")
	if why := strings.Join(slices.DeleteFunc([]string{whyA, whyB}, func(s string) bool { return s == "" }), "; "); why != "" {
		return &report.CapacitySearch{NotRun: why}
	}
	out := *ca
	out.Method = "each arm's capacity as its own run's search found it; A's search: " + ca.Method
	if cb.Method != ca.Method {
		out.Method += "; B's search: " + cb.Method
	}
	out.Concurrent = ca.Concurrent && cb.Concurrent
	out.Arms = []report.CapacityArm{armA, armB}
	out.Gains = []report.CapacitySearchGain{analysis.SearchGain(armB, armA)}
	return &out
}

// renameEnergy carries both sides' energy cells of the compared arms, renamed,
// so a VRAM budget can decide; "not measured" when neither side measured energy.
func renameEnergy(a, b *report.EnergySection, opts CompareOptions) *report.EnergySection {
	var cells []report.EnergyCell
	if a != nil && a.NotMeasured == "" {
		cells = takeArm(a.Cells, opts.ArmA, opts.NameA, func(c *report.EnergyCell) *string { return &c.Arm })
	}
	if b != nil && b.NotMeasured == "" {
		cells = append(cells, takeArm(b.Cells, opts.ArmB, opts.NameB, func(c *report.EnergyCell) *string { return &c.Arm })...)
	}
	if len(cells) == 0 {
		return &report.EnergySection{NotMeasured: "not measured in either run"}
	}
	return &report.EnergySection{Cells: cells}
}

// renameCost carries both sides' cost cells of the compared arms, renamed.
func renameCost(a, b *report.CostSection, opts CompareOptions) *report.CostSection {
	var cells []report.CostCell
	if a != nil && a.NotMeasured == "" {
		cells = takeArm(a.Cells, opts.ArmA, opts.NameA, func(c *report.CostCell) *string { return &c.Arm })
	}
	if b != nil && b.NotMeasured == "" {
		cells = append(cells, takeArm(b.Cells, opts.ArmB, opts.NameB, func(c *report.CostCell) *string { return &c.Arm })...)
	}
	if len(cells) == 0 {
		return &report.CostSection{NotMeasured: "not measured in either run"}
	}
	return &report.CostSection{Cells: cells}
}

// takeArm returns copies of the cells whose arm (armOf) is arm, renamed to name.
func takeArm[T any](cells []T, arm, name string, armOf func(*T) *string) []T {
	var out []T
	for _, c := range cells {
		if a := armOf(&c); *a == arm {
			*a = name
			out = append(out, c)
		}
	}
	return out
}

// completeness says whether a run completed and, if not, why.
func completeness(r report.Results) string {
	if r.Complete {
		return "complete"
	}
	return "incomplete (" + report.OrText(r.IncompleteReason, "no reason recorded") + ")"
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// unknownCommits says when A's or B's commit was not recorded (a binary
// built without Go's VCS stamp, run outside a go run checkout), so whether
// the two runs' code differs is not known; "" when both are recorded.
func unknownCommits(a, b report.Results) string {
	var which []string
	if a.Manifest.GitCommit == "" {
		which = append(which, "A's")
	}
	if b.Manifest.GitCommit == "" {
		which = append(which, "B's")
	}
	if len(which) == 0 {
		return ""
	}
	return strings.Join(which, " and ") + " commit not recorded (a binary built without Go's VCS stamp): whether the two runs' code differs is not known"
}
