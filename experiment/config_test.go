package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/internal/yamlcheck"
)

// validBase is a config that parses cleanly; the tests below break one
// field of it at a time.
const validBase = `name: base
trace: {path: t.csv}
load:
  rates_rps: [3, 10]
  duration: 14s
  max_requests: 600
server: {kind: sim}
arms: [{name: baseline}, {name: c, sim_overrides: {rmsnorm: 2}}]
amdahl: {target_op: rmsnorm}
repetitions: 1
cost:
  price_per_gpu_hour: 3.5
  currency: USD
  price_date: "2026-05-01"
  price_source: test input
  gpus: 1
  utilisation: 1
`

// TestConfigValueTypes: a value that does not fit its field is refused with
// the dotted field, the line and the kind of value wanted, all at once, and
// the range checks that the field's zero value would fail are not added.
func TestConfigValueTypes(t *testing.T) {
	base, err := Parse(strings.NewReader(validBase), "base.yaml", ".")
	if err != nil || base.Extra.Cost.GPUs != 1 {
		t.Fatalf("base config: %v", err)
	}
	cases := []struct {
		name    string
		from    string // a line of validBase
		to      string // replaced by this
		want    []string
		notWant []string
	}{
		{name: "decimal GPUs", from: "  gpus: 1", to: "  gpus: 2.9",
			want: []string{"cost.gpus (line 16): 2.9 is not a whole number"}, notWant: []string{"must be ≥ 1"}},
		{name: "decimal repetitions", from: "repetitions: 1", to: "repetitions: 1.5",
			want: []string{"repetitions (line 10): 1.5 is not a whole number"}},
		{name: "decimal max_requests", from: "  max_requests: 600", to: "  max_requests: 600.9",
			want: []string{"load.max_requests (line 6): 600.9 is not a whole number"}},
		{name: "text in a whole number", from: "  max_requests: 600", to: `  max_requests: "lots"`,
			want: []string{`load.max_requests (line 6): "lots" is not a whole number`}},
		{name: "word duration", from: "  duration: 14s", to: "  duration: fourteen",
			want:    []string{`load.duration (line 5): "fourteen" is not a duration such as 14s`},
			notWant: []string{"must be > 0", "cannot unmarshal", "time.Duration"}},
		{name: "duration without unit", from: "  duration: 14s", to: "  duration: 14",
			want: []string{"load.duration (line 5): 14 is not a duration such as 14s (a number needs a unit"}, notWant: []string{"must be > 0"}},
		{name: "rates not a list", from: "  rates_rps: [3, 10]", to: "  rates_rps: fast",
			want:    []string{`load.rates_rps (line 4): "fast" is not a list of numbers`},
			notWant: []string{"at least one offered load", "[]float64", "cannot unmarshal"}},
		{name: "one rate not a number", from: "  rates_rps: [3, 10]", to: "  rates_rps: [3, ten]",
			want: []string{`load.rates_rps[1] (line 4): "ten" is not a number`}, notWant: []string{"must be a finite number > 0 req/s"}},
		{name: "bool", from: "server: {kind: sim}", to: "server: {kind: sim}\nenergy: {disabled: maybe}",
			want: []string{`energy.disabled (line 8): "maybe" is not true or false`}},
		{name: "mapping for a number", from: "  price_per_gpu_hour: 3.5", to: "  price_per_gpu_hour: {usd: 3.5}",
			want: []string{"cost.price_per_gpu_hour (line 12): a mapping is not a number"}, notWant: []string{"must be a finite price"}},
		{name: "list for a block", from: "server: {kind: sim}", to: "server: [sim]",
			want: []string{"server (line 7): a list is not a mapping"}, notWant: []string{"kind: required"}},
		{name: "sim block field", from: "server: {kind: sim}", to: "server: {kind: sim, sim: {scheduler: {max_num_seqs: 8.5}}}",
			want: []string{"server.sim.scheduler.max_num_seqs (line 7): 8.5 is not a whole number"}},
		{name: "every problem at once, unrelated checks kept", from: "  duration: 14s",
			to:   "  duration: fourteen\n  mode: burst\n  warmup: soon",
			want: []string{`load.duration (line 5): "fourteen"`, `load.warmup (line 7): "soon"`, `load.mode (line 6): unknown mode "burst"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkReplaced(t, tc.from, tc.to, tc.want, tc.notWant) })
	}
	t.Run("whole values still decode", func(t *testing.T) {
		doc := strings.NewReplacer("  gpus: 1", "  gpus: 2.0", "repetitions: 1", "repetitions: 3", "  max_requests: 600", "  max_requests: 1e3").Replace(validBase)
		cfg, err := Parse(strings.NewReader(doc), "ok.yaml", ".")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Extra.Cost.GPUs != 2 || cfg.Repetitions != 3 || cfg.Load.MaxRequests != 1000 {
			t.Errorf("gpus %d, repetitions %d, max_requests %d; want 2, 3, 1000", cfg.Extra.Cost.GPUs, cfg.Repetitions, cfg.Load.MaxRequests)
		}
	})
}

// leafField is one scalar field of the config tree, by dotted YAML path.
type leafField struct {
	path []string // "[]" marks a list of one element
	t    reflect.Type
}

// configLeaves lists every field of t (as the config decodes it) whose type
// is a whole number, a float or a duration, following structs, pointers and
// lists of structs (maps are not followed: their keys are free).
func configLeaves(t reflect.Type, path []string, out *[]leafField) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == simSectionType {
		t = t.Field(0).Type
	}
	switch {
	case yamlcheck.IsDuration(t) || yamlcheck.IsInt(t) || yamlcheck.IsUint(t) || yamlcheck.IsFloat(t):
		*out = append(*out, leafField{path: path, t: t})
	case t.Kind() == reflect.Struct:
		fields := yamlcheck.Fields(t)
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			configLeaves(fields[k], append(append([]string{}, path...), k), out)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		configLeaves(t.Elem(), append(append([]string{}, path...), "[]"), out)
	}
}

// TestConfigEveryNumericField puts a wrong value into every whole-number,
// number and duration field of the config in turn (found from the Go types,
// so a field added later is covered) and checks that each is refused by name:
// yaml.v3 alone truncates 2.5 into an int without a word.
func TestConfigEveryNumericField(t *testing.T) {
	var leaves []leafField
	configLeaves(reflect.TypeOf(Config{}), nil, &leaves)
	ints := 0
	for _, l := range leaves {
		if yamlcheck.IsInt(l.t) || yamlcheck.IsUint(l.t) {
			ints++
		}
	}
	if ints < 10 {
		t.Fatalf("found %d whole-number fields, want the config's (seed, repetitions, load.max_requests, cost.gpus, …): %v", ints, leaves)
	}
	for _, l := range leaves {
		var (
			bad  any
			want string
		)
		switch {
		case yamlcheck.IsDuration(l.t):
			bad, want = "fourteen", `"fourteen" is not a duration such as 14s`
		case yamlcheck.IsInt(l.t) || yamlcheck.IsUint(l.t):
			bad, want = 2.5, "2.5 is not a whole number"
		default:
			bad, want = "fast", `"fast" is not a number`
		}
		dotted := strings.ReplaceAll(strings.Join(l.path, "."), ".[]", "[0]")
		t.Run(dotted, func(t *testing.T) {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(validBase), &doc); err != nil {
				t.Fatal(err)
			}
			setPath(doc, l.path, bad)
			b, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(strings.NewReader(string(b)), "bad.yaml", ".")
			w := fmt.Sprintf("%s (line ", dotted)
			if err == nil || !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant %q … %q\nconfig:\n%s", err, w, want, b)
			}
		})
	}
}

// setPath sets doc's value at path ("[]": the first element of a list,
// created if needed) to v, creating mappings on the way.
func setPath(doc map[string]any, path []string, v any) {
	k := path[0]
	if len(path) == 1 {
		doc[k] = v
		return
	}
	if path[1] == "[]" {
		list, _ := doc[k].([]any)
		if len(list) == 0 {
			list = []any{map[string]any{}}
		}
		m, ok := list[0].(map[string]any)
		if !ok {
			m = map[string]any{}
			list[0] = m
		}
		doc[k] = list
		if len(path) == 2 {
			list[0] = v
			return
		}
		setPath(m, path[2:], v)
		return
	}
	m, ok := doc[k].(map[string]any)
	if !ok {
		m = map[string]any{}
		doc[k] = m
	}
	setPath(m, path[1:], v)
}

// refFilesConfig is a reference-server config naming a trace, a candidate
// kernel, its validation report and captured set (%s each, then the mode).
const refFilesConfig = `name: files
trace: {path: %s}
load: {rates_rps: [1], duration: 2s}
server: {kind: reference, reference: {python: python3}}
arms:
  - name: baseline
  - name: cand
    override: {target: 'm:C.forward', candidate: '%s:f', mode: %s, validation_report: %s, captured_shapes: %s}
`

// TestLoadFileProblems: Load with CheckFiles names the field, the path as written and every
// folder looked in (the config's folder, then the working folder, for the
// trace; the working folder, then the config's, for an override's files, as
// integrate.Override.Resolve does) for each missing file, all at once, and
// drops the override check that only repeats a missing candidate.
func TestLoadFileProblems(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cfgDir := filepath.Join(t.TempDir(), "cfgs")
	for _, f := range []string{"trace.csv", "k.py", "v.json", "shapes.json"} {
		if err := os.MkdirAll(filepath.Join(cfgDir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfgDir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cwd, "cwd-trace.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := func(dir, p string) string { return filepath.Join(dir, p) }
	cases := []struct {
		name                            string
		trace, cand, mode, report, shps string
		want                            []string // "" : loads
		notWant                         []string
	}{
		{name: "all there", trace: "trace.csv", cand: "k.py", mode: "on", report: "v.json", shps: "shapes.json"},
		{name: "trace in the working folder only", trace: "cwd-trace.csv", cand: "k.py", mode: "on", report: "v.json", shps: "shapes.json"},
		{name: "trace typo", trace: "traces/Azure_typo.csv", cand: "k.py", mode: "on", report: "v.json", shps: "shapes.json",
			want: []string{fmt.Sprintf(`trace.path (line 2): "traces/Azure_typo.csv": no such file (looked in %s and %s)`,
				in(cfgDir, "traces/Azure_typo.csv"), in(cwd, "traces/Azure_typo.csv"))}},
		{name: "absolute trace missing", trace: in(cwd, "gone.csv"), cand: "k.py", mode: "on", report: "v.json", shps: "shapes.json",
			want: []string{fmt.Sprintf(`trace.path (line 2): %q: no such file (looked in %s)`, in(cwd, "gone.csv"), in(cwd, "gone.csv"))}},
		{name: "trace is a folder", trace: "sub", cand: "k.py", mode: "on", report: "v.json", shps: "shapes.json",
			want: []string{`trace.path (line 2): "sub": is a folder, not a file`}},
		{name: "every override file missing at once", trace: "trace.csv", cand: "kk.py", mode: "on", report: "vv.json", shps: "ss.json",
			want: []string{
				fmt.Sprintf(`arms[1].override.candidate (line 8): "kk.py": no such file (looked in %s and %s)`, in(cwd, "kk.py"), in(cfgDir, "kk.py")),
				fmt.Sprintf(`arms[1].override.validation_report (line 8): "vv.json": no such file (looked in %s and %s); `+"`transferlab validate CONFIG --arm cand --out DIR` writes it", in(cwd, "vv.json"), in(cfgDir, "vv.json")),
				`arms[1].override.captured_shapes (line 8): "ss.json": no such file`},
			notWant: []string{"not a readable file"}},
		{name: "capture mode reads no report", trace: "trace.csv", cand: "k.py", mode: "capture", report: "vv.json", shps: "ss.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(cfgDir, "c.yaml")
			doc := fmt.Sprintf(refFilesConfig, tc.trace, tc.cand, tc.mode, tc.report, tc.shps)
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(path, CheckFiles())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error for:\n%s", doc)
			}
			if !strings.HasPrefix(err.Error(), "config "+path+": ") {
				t.Errorf("error does not name the config %s: %v", path, err)
			}
			checkMessages(t, err, tc.want, tc.notWant)
		})
	}
}

// checkMessages fails t unless err's text contains every want and no
// notWant (a follow-on of an error already given).
func checkMessages(t *testing.T, err error, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain\n%s\n%v", w, err)
		}
	}
	for _, w := range notWant {
		if strings.Contains(err.Error(), w) {
			t.Errorf("error contains the follow-on %q:\n%v", w, err)
		}
	}
}

// TestConfigRangeErrorsFormat: range errors read as type errors do, `field
// (line N): message`, with the line of the value; a null value says null
// rather than "got 0", a key left out says not set.
func TestConfigRangeErrorsFormat(t *testing.T) {
	cases := []struct {
		name, from, to string
		want, notWant  []string
	}{
		{name: "negative duration", from: "  duration: 14s", to: "  duration: -14s",
			want: []string{"load.duration (line 5): must be > 0, got -14s"}},
		{name: "negative rate", from: "  rates_rps: [3, 10]", to: "  rates_rps: [3, 10, -2]",
			want: []string{"load.rates_rps[2] (line 4): must be a finite number > 0 req/s, got -2"}},
		// ±Inf is refused at load like NaN, not when a trace is scaled to it.
		{name: "infinite rate", from: "  rates_rps: [3, 10]", to: "  rates_rps: [3, .inf]",
			want: []string{"load.rates_rps[1] (line 4): must be a finite number > 0 req/s, got +Inf"}},
		{name: "negative infinite rate", from: "  rates_rps: [3, 10]", to: "  rates_rps: [-.inf, 10]",
			want: []string{"load.rates_rps[0] (line 4): must be a finite number > 0 req/s, got -Inf"}},
		{name: "NaN rate", from: "  rates_rps: [3, 10]", to: "  rates_rps: [3, .nan]",
			want: []string{"load.rates_rps[1] (line 4): must be a finite number > 0 req/s, got NaN"}},
		{name: "request timeout", from: "repetitions: 1", to: "repetitions: 1\nrequest:\n  timeout: -5s",
			want: []string{"request.timeout (line 12): must be ≥ 0, got -5s"}},
		{name: "cost block", from: "  gpus: 1", to: "  gpus: -1",
			want: []string{"cost.gpus (line 16): must be ≥ 1, got -1"}, notWant: []string{"cost: line"}},
		{name: "null gpus", from: "  gpus: 1", to: "  gpus: ~",
			want: []string{"cost.gpus (line 16): must be ≥ 1, got null (no value given)"}, notWant: []string{"got 0"}},
		{name: "gpus left out", from: "  gpus: 1\n", to: "",
			want: []string{"cost.gpus (line 11): must be ≥ 1, not set"}, notWant: []string{"got 0"}},
		{name: "sim block range", from: "server: {kind: sim}", to: "server: {kind: sim, sim: {model: {layers: 0}}}",
			want: []string{"server.sim.model.layers (line 7): must be ≥ 1, got 0"}},
		{name: "server kind", from: "server: {kind: sim}", to: "server: {kind: vllm}",
			want: []string{`server.kind (line 7): "vllm": unknown server kind`}},
		// Per-arm files would collide on a case-insensitive file system.
		{name: "arm names differing by case", from: "{name: c, sim_overrides: {rmsnorm: 2}}", to: "{name: Baseline, sim_overrides: {rmsnorm: 2}}",
			want: []string{`arms[1].name (line 8): "Baseline" differs from arms[0].name "baseline" only by case`}},
		// A misspelled target op on the simulator is refused at load, as a
		// misspelled sim_overrides op is, not warned about in every cell.
		{name: "unknown target op on the sim", from: "amdahl: {target_op: rmsnorm}", to: "amdahl: {target_op: rmsnrom}",
			want: []string{`amdahl.target_op (line 9): unknown op "rmsnrom" (known: `, "rmsnorm"}},
		// A key given twice is named with its dotted path and both lines;
		// the rest of the file still decodes, so no field after it is
		// reported missing, and its other problems are reported with it.
		{name: "duplicate key", from: "repetitions: 1", to: "repetitions: 1\nrepetitions: 2",
			want:    []string{`config bad.yaml: repetitions (line 11): key given twice, first at line 10: keep one of the two`},
			notWant: []string{"the file", "already defined", "trace.path", "load.rates_rps", "load.duration", "arms", "server.kind", "required"}},
		{name: "duplicate nested key", from: "  duration: 14s", to: "  duration: 14s\n  duration: 20s",
			want:    []string{`config bad.yaml: load.duration (line 6): key given twice, first at line 5`},
			notWant: []string{"the file", "already defined", "required"}},
		{name: "duplicate key and another problem", from: "  duration: 14s", to: "  duration: 14s\n  duration: 20s\n  warmup: 3",
			want:    []string{`load.duration (line 6): key given twice, first at line 5`, "load.warmup (line 7): 3 is not a duration such as 14s"},
			notWant: []string{"already defined"}},
		// The report computes p50, p90, p95, p99 and p99.9 per cell: an SLO
		// at another percentile could never be judged (every load would
		// read missed), so it is refused at load.
		{name: "slo percentile the report does not compute", from: "repetitions: 1", to: "repetitions: 1\nslo: {ttft_ms: 500, percentile: 97}",
			want: []string{"slo.percentile (line 11): must be one of 50, 90, 95, 99 or 99.9 (the percentiles the report computes per cell), got 97"}},
		{name: "duplicate arm names", from: "{name: c, sim_overrides: {rmsnorm: 2}}", to: "{name: baseline, sim_overrides: {rmsnorm: 2}}",
			want: []string{`arms[1].name (line 8): duplicate arm name "baseline"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkReplaced(t, tc.from, tc.to, tc.want, tc.notWant) })
	}
}

// checkReplaced parses validBase with its text from replaced by to and
// fails t unless the error contains every want and no notWant.
func checkReplaced(t *testing.T, from, to string, want, notWant []string) {
	t.Helper()
	if !strings.Contains(validBase, from) {
		t.Fatalf("validBase has no %q", from)
	}
	doc := strings.Replace(validBase, from, to, 1)
	_, err := Parse(strings.NewReader(doc), "bad.yaml", ".")
	if err == nil {
		t.Fatalf("no error for:\n%s", doc)
	}
	checkMessages(t, err, want, notWant)
}

// TestTraceFirstBeyondRows: trace.first asking for more rows than the
// trace has is refused when the trace is read, naming the field, its line
// and the row count; at most the row count is kept as asked.
func TestTraceFirstBeyondRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := capSearchTrace(t, dir) // 400 rows
	for _, tc := range []struct {
		first int
		want  string // "" : accepted
	}{{400, ""}, {401, "trace.first (line 4): 401 rows asked, but the trace has 400"}} {
		text := strings.Replace(fmt.Sprintf(capSearchConfig, trace), "trace: {path: "+trace+"}", fmt.Sprintf("trace: {path: %s, first: %d}", trace, tc.first), 1)
		path := filepath.Join(dir, fmt.Sprintf("first%d.yaml", tc.first))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, base, _, err := loadSchedules(t, path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("first %d: %v", tc.first, err)
		case tc.want == "" && len(base.Requests) != tc.first:
			t.Errorf("first %d kept %d rows", tc.first, len(base.Requests))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("first %d: error %v, want one containing %q", tc.first, err, tc.want)
		}
	}
}
