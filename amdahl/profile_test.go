package amdahl

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rebuild testdata/*.sqlite from testdata/*.sql")

// TestBuildNsysFixtures rebuilds the Nsight Systems fixtures from their SQL
// with -update, and otherwise checks the committed .sqlite still holds what
// the .sql says (same kernel rows).
func TestBuildNsysFixtures(t *testing.T) {
	for _, name := range []string{"nsys_small", "nsys_minimal"} {
		t.Run(name, func(t *testing.T) {
			sqlPath := filepath.Join("testdata", name+".sql")
			dbPath := filepath.Join("testdata", name+".sqlite")
			script, err := os.ReadFile(sqlPath)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				_ = os.Remove(dbPath)
				db, err := sql.Open("sqlite", dbPath)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(string(script)); err != nil {
					t.Fatalf("%s: %v", sqlPath, err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&n); err != nil {
				t.Fatalf("%s: %v (run go test ./amdahl -run TestBuildNsysFixtures -update)", dbPath, err)
			}
			if want := strings.Count(string(script), "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL"); n != want {
				t.Fatalf("%s has %d kernel rows, %s inserts %d: rebuild with -update", dbPath, n, sqlPath, want)
			}
		})
	}
}

type wantFractions struct {
	fgpu, fwall, fexcl float64
	busy, target       float64 // µs
	attr               Attribution
	phases             map[string][2]float64 // phase → {f_gpu, f_wall}
}

func checkFractions(t *testing.T, fr Fractions, p *Profile, w wantFractions) {
	t.Helper()
	approx(t, "busy µs", float64(fr.Busy)/1e3, w.busy, exact)
	approx(t, "target µs", float64(fr.TargetGPU)/1e3, w.target, exact)
	approx(t, "f_gpu", float64(fr.FGPU), w.fgpu, exact)
	approx(t, "f_wall", float64(fr.FWall), w.fwall, exact)
	approx(t, "f_excl", float64(fr.FExcl), w.fexcl, exact)
	if p != nil && p.Attribution != w.attr {
		t.Errorf("attribution = %+v, want %+v", p.Attribution, w.attr)
	}
	if w.phases == nil {
		return
	}
	if len(fr.Phases) != len(w.phases) {
		t.Errorf("phases = %v, want keys of %v", fr.Phases, w.phases)
	}
	for ph, want := range w.phases {
		got := fr.Phases[ph]
		approx(t, ph+" f_gpu", float64(got.FGPU), want[0], exact)
		approx(t, ph+" f_wall", float64(got.FWall), want[1], exact)
	}
}

// overlapCases are the hand-computed answers of testdata/README.md for the
// timeline shared by chrome_overlap.json and nsys_small.sqlite.
func overlapCases() []struct {
	name   string
	opts   []Option
	active []Interval
	want   wantFractions
} {
	rms := regexp.MustCompile(`^triton_rmsnorm`)
	seq := []*regexp.Regexp{rms, regexp.MustCompile(`^gemm_a$`)}
	return []struct {
		name   string
		opts   []Option
		active []Interval
		want   wantFractions
	}{
		{
			name: "A: ranges, no pattern (graph kernels unattributed)",
			want: wantFractions{fgpu: 40.0 / 120, fwall: 40.0 / 150, fexcl: 25.0 / 150, busy: 120, target: 40,
				attr: Attribution{ByCorrelation: 3, GraphKernels: 2, GraphUnattributed: 2}},
		},
		{
			name: "B: ranges + pattern for graph replays",
			opts: []Option{KernelPattern(rms)},
			want: wantFractions{fgpu: 45.0 / 120, fwall: 45.0 / 150, fexcl: 30.0 / 150, busy: 120, target: 45,
				attr:   Attribution{ByCorrelation: 3, ByName: 1, GraphKernels: 2},
				phases: map[string][2]float64{PhasePrefill: {30.0 / 70, 30.0 / 70}, PhaseDecode: {15.0 / 50, 15.0 / 60}}},
		},
		{
			name:   "C: B with request intervals [0,60) and [100,150) µs",
			opts:   []Option{KernelPattern(rms)},
			active: []Interval{{us(0), us(60)}, {us(100), us(150)}},
			want: wantFractions{fgpu: 45.0 / 120, fwall: 35.0 / 100, fexcl: 20.0 / 100, busy: 120, target: 45,
				attr:   Attribution{ByCorrelation: 3, ByName: 1, GraphKernels: 2},
				phases: map[string][2]float64{PhasePrefill: {30.0 / 70, 20.0 / 50}, PhaseDecode: {15.0 / 50, 15.0 / 50}}},
		},
		{
			name: "E: ranges + sequence rms→gemm_a: only the graph run k6,k7",
			opts: []Option{KernelSequence(seq)},
			want: wantFractions{fgpu: 50.0 / 120, fwall: 50.0 / 150, fexcl: 40.0 / 150, busy: 120, target: 50,
				attr: Attribution{ByCorrelation: 3, BySequence: 2, GraphKernels: 2}},
		},
		{
			name: "F: no range, sequence rms→gemm_a: runs k1k2, k4k5, k6k7 on stream 7",
			opts: []Option{TargetAnnotation("absent::range"), KernelSequence(seq)},
			want: wantFractions{fgpu: 105.0 / 120, fwall: 105.0 / 150, fexcl: 70.0 / 150, busy: 120, target: 105,
				attr: Attribution{BySequence: 6, GraphKernels: 2}},
		},
		{
			name: "D: no range of that name, pattern only",
			opts: []Option{TargetAnnotation("absent::range"), KernelPattern(rms)},
			want: wantFractions{fgpu: 45.0 / 120, fwall: 45.0 / 150, fexcl: 30.0 / 150, busy: 120, target: 45,
				attr: Attribution{ByName: 4, GraphKernels: 2}},
		},
	}
}

// TestOverlapFixtures reads the same timeline from the Chrome trace and the
// Nsight export: both readers must give the hand-computed answers.
func TestOverlapFixtures(t *testing.T) {
	t.Parallel()
	readers := map[string]func(opts ...Option) (*Profile, error){
		"chrome": func(opts ...Option) (*Profile, error) {
			return ReadChrome(filepath.Join("testdata", "chrome_overlap.json"), opts...)
		},
		"nsys": func(opts ...Option) (*Profile, error) {
			return ReadNsys(context.Background(), filepath.Join("testdata", "nsys_small.sqlite"), opts...)
		},
	}
	for name, read := range readers {
		for _, c := range overlapCases() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				p, err := read(c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				var wo []WindowOption
				if c.active != nil {
					wo = append(wo, Active(c.active))
				}
				fr, err := p.Fractions(wo...)
				if err != nil {
					t.Fatal(err)
				}
				checkFractions(t, fr, p, c.want)
				if !p.UnixBaseKnown || p.UnixBaseNs != 1764400000000000000 {
					t.Errorf("unix base = %d (known %v)", p.UnixBaseNs, p.UnixBaseKnown)
				}
			})
		}
	}
}

func TestNsysMinimalFixture(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "nsys_minimal.sqlite")
	p, err := ReadNsys(context.Background(), path, KernelPattern(regexp.MustCompile(`rmsnorm`)))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := p.Fractions()
	if err != nil {
		t.Fatal(err)
	}
	checkFractions(t, fr, p, wantFractions{fgpu: 45.0 / 110, fwall: 45.0 / 135, fexcl: 30.0 / 135, busy: 110, target: 45,
		attr: Attribution{ByName: 4, GraphKernels: 2}})
	if fr.Phases != nil {
		t.Errorf("phases = %v, want none (no NVTX)", fr.Phases)
	}
	if _, err := ReadNsys(context.Background(), path); !errors.Is(err, ErrNoAttribution) {
		t.Errorf("no ranges, no pattern: err = %v, want ErrNoAttribution", err)
	}
}

func TestChromeAnnotFixture(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "chrome_annot.json"))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := p.Fractions()
	if err != nil {
		t.Fatal(err)
	}
	checkFractions(t, fr, p, wantFractions{fgpu: 20.0 / 62, fwall: 20.0 / 71, fexcl: 13.0 / 71, busy: 62, target: 20,
		attr: Attribution{ByAnnotation: 2, ByCorrelation: 1, GraphKernels: 1, GraphUnattributed: 1}})
	if got := p.TargetKernelNames(); strings.Join(got, ",") != "rms_a,rms_b,mul_kernel" {
		t.Errorf("TargetKernelNames = %v", got)
	}
	if p.UnixBaseKnown {
		t.Error("bare-array trace has no base time")
	}
}

// TestLearnedNames: names learned from the eager kernels attribute the same
// kernels when replayed from a graph.
func TestLearnedNames(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "chrome_overlap.json")
	eager, err := ReadChrome(path)
	if err != nil {
		t.Fatal(err)
	}
	re, err := NamePattern(eager.TargetKernelNames())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ReadChrome(path, KernelPattern(re))
	if err != nil {
		t.Fatal(err)
	}
	if p.Attribution.ByName != 1 || p.Attribution.GraphUnattributed != 0 {
		t.Fatalf("attribution with learned names = %+v", p.Attribution)
	}
	if _, err := NamePattern(nil); err == nil {
		t.Fatal("NamePattern(nil) should fail")
	}
}

func TestProfileWindows(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "chrome_overlap.json"), KernelPattern(regexp.MustCompile(`^triton_rmsnorm`)))
	if err != nil {
		t.Fatal(err)
	}
	// [10,85) holds target 20+10 = 30 µs; [85,160) holds 5+10 = 15 µs.
	ws, err := p.WindowSamples(SplitEven(p.Span, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 {
		t.Fatalf("%d samples", len(ws))
	}
	approx(t, "w0 f", float64(ws[0].Target)/float64(ws[0].ActiveWall), 30.0/75, exact)
	approx(t, "w1 f", float64(ws[1].Target)/float64(ws[1].ActiveWall), 15.0/75, exact)
	est, err := FWallEstimate(ws, Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "pooled f", float64(est.Value), 45.0/150, exact)
	if !(est.Lo <= est.Value && est.Value <= est.Hi) || est.Lo < 15.0/75-exact || est.Hi > 30.0/75+exact {
		t.Fatalf("interval %v not within the windows' range", est)
	}
	if _, err := p.Fractions(Window(Interval{us(0), us(5)})); err != nil {
		t.Fatalf("a window with no kernels is still a window: %v", err)
	}
	if _, err := p.Fractions(Window(Interval{us(5), us(5)})); err == nil {
		t.Fatal("empty window accepted")
	}
	if _, err := p.Fractions(Active([]Interval{{us(500), us(600)}})); err == nil {
		t.Fatal("active time outside the window accepted")
	}
}

func TestChromeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json, want string
		wantIs           error
	}{
		{"syntax error names the line", "{\"traceEvents\": [\n{\"ph\": \"X\",,}\n]}", "line 2", nil},
		{"no traceEvents", `{"foo": 1}`, `no "traceEvents"`, nil},
		{"missing dur", `[{"ph":"X","cat":"kernel","name":"k","ts":1,"pid":0,"tid":7}]`, "traceEvents[0]", nil},
		{"negative dur", `[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":-2,"pid":0,"tid":7}]`, "field dur", nil},
		{"no stream", `[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":0,"tid":"?"}]`, "args.stream/tid", nil},
		{"no GPU work", `[{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":2,"pid":0,"tid":1}]`, "no GPU work", nil},
		{"no ranges and no pattern", `[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":0,"tid":7}]`, "transferlab::target", ErrNoAttribution},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseChrome(strings.NewReader(c.json), "bad.json")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name the file and %q", err, c.want)
			}
			if c.wantIs != nil && !errors.Is(err, c.wantIs) {
				t.Errorf("error %v is not %v", err, c.wantIs)
			}
		})
	}
}

func TestNsysErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct{ name, sql, want string }{
		{"no kernel table", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);`, "CUPTI_ACTIVITY_KIND_KERNEL: missing"},
		{"missing column", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
			CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER);`, "missing column end"},
		{"no name column", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
			CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER);`, "shortName"},
		{"end before start", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); INSERT INTO StringIds VALUES (1,'k');
			CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER);
			INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 5, 0, 7, 1);`, "row 1: column end"},
		{"dangling name id", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
			CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER);
			INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 5, 0, 7, 99);`, "not found in StringIds"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "bad"+string(rune('a'+i))+".sqlite")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, err = ReadNsys(context.Background(), path, KernelPattern(regexp.MustCompile(`k`)))
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v should name %s and %q", err, path, c.want)
			}
		})
	}
	if _, err := ReadNsys(context.Background(), filepath.Join(dir, "missing.sqlite")); err == nil {
		t.Fatal("missing file accepted")
	}
}
