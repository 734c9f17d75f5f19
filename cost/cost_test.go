package cost

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testInputs uses a made-up price for arithmetic only; it is not a market rate.
func testInputs() Inputs {
	return Inputs{PricePerGPUHour: 3.5, Currency: "USD", PriceDate: "2026-11-01",
		PriceSource: "test fixture (not a market price)", GPUs: 8, Utilisation: 0.5,
		EnergyPricePerKWh: 0.2, EnergyPriceSource: "test fixture"}
}

// close reports |got − want| ≤ 1e-12 × max(1, |want|): the formulas are a few
// float64 multiplications and divisions, so only rounding separates them.
func closeTo(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) <= 1e-12*math.Max(1, math.Abs(want))
}

// TestCompute checks the formulas against hand-computed values.
func TestCompute(t *testing.T) {
	t.Parallel()
	e := 126_000.0
	cases := []struct {
		name          string
		in            func(*Inputs)
		window        time.Duration
		out, total    int
		energy        *float64
		gpuCost       float64
		per1MOut      *float64
		per1MTotal    *float64
		per1MOutUtil  *float64
		jPerTok       *float64
		kWh           *float64
		energyCost    *float64
		energyPer1M   *float64
		noteSubstring string
	}{
		{
			// 3.5 USD × 8 GPUs × 90 s (0.025 h) = 0.7 USD; 0.7 / 35 000 × 10⁶ = 20;
			// 0.7 / 140 000 × 10⁶ = 5; at 50 % utilisation 40; 126 000 J / 35 000 = 3.6 J/token;
			// 126 000 J = 0.035 kWh × 0.2 = 0.007 USD; 0.007 / 35 000 × 10⁶ = 0.2.
			name: "all figures", window: 90 * time.Second, out: 35_000, total: 140_000, energy: &e,
			gpuCost: 0.7, per1MOut: ptr(20.0), per1MTotal: ptr(5.0), per1MOutUtil: ptr(40.0),
			jPerTok: ptr(3.6), kWh: ptr(0.035), energyCost: ptr(0.007), energyPer1M: ptr(0.2),
		},
		{
			// 2.0 EUR × 1 GPU × 1 h = 2; 2 / 1 000 000 × 10⁶ = 2; utilisation 1 leaves it.
			name: "one GPU, one hour, no energy price",
			in: func(in *Inputs) {
				in.PricePerGPUHour, in.Currency, in.GPUs, in.Utilisation = 2, "EUR", 1, 1
				in.EnergyPricePerKWh, in.EnergyPriceSource = 0, ""
			},
			window: time.Hour, out: 1_000_000, total: 1_500_000, energy: &e,
			gpuCost: 2, per1MOut: ptr(2.0), per1MTotal: ptr(4.0 / 3), per1MOutUtil: ptr(2.0),
			jPerTok: ptr(0.126), kWh: ptr(0.035), noteSubstring: "no energy_price_per_kwh",
		},
		{
			name:   "energy unavailable: energy figures null",
			window: 90 * time.Second, out: 35_000, total: 140_000,
			gpuCost: 0.7, per1MOut: ptr(20.0), per1MTotal: ptr(5.0), per1MOutUtil: ptr(40.0),
			noteSubstring: "energy unavailable",
		},
		{
			name:   "no output tokens: per-token figures null, never 0 or Inf",
			window: 90 * time.Second, out: 0, total: 5000, energy: &e,
			gpuCost: 0.7, per1MTotal: ptr(140.0), kWh: ptr(0.035), energyCost: ptr(0.007),
			noteSubstring: "no output tokens",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInputs()
			if tc.in != nil {
				tc.in(&in)
			}
			r, err := Compute(in, tc.window, tc.out, tc.total, tc.energy)
			if err != nil {
				t.Fatal(err)
			}
			check := func(name string, got, want *float64) {
				t.Helper()
				if want == nil {
					if got != nil {
						t.Errorf("%s = %v, want null", name, *got)
					}
					return
				}
				if !closeTo(got, *want) {
					t.Errorf("%s = %v, want %v", name, got, *want)
				}
			}
			check("gpu_cost", &r.GPUCost, &tc.gpuCost)
			check("cost_per_1m_output_tokens", r.CostPer1MOutputTokens, tc.per1MOut)
			check("cost_per_1m_total_tokens", r.CostPer1MTotalTokens, tc.per1MTotal)
			check("cost_per_1m_output_tokens_at_utilisation", r.CostPer1MOutputTokensAtUtilisation, tc.per1MOutUtil)
			check("j_per_output_token", r.JPerOutputToken, tc.jPerTok)
			check("energy_kwh", r.EnergyKWh, tc.kWh)
			check("energy_cost", r.EnergyCost, tc.energyCost)
			check("energy_cost_per_1m_output_tokens", r.EnergyCostPer1MOutputTokens, tc.energyPer1M)
			if r.Inputs.PricePerGPUHour != in.PricePerGPUHour || r.Inputs.Currency != in.Currency || r.Inputs.PriceDate != in.PriceDate ||
				r.Inputs.GPUs != in.GPUs || r.Inputs.Utilisation != in.Utilisation || r.WindowS != tc.window.Seconds() ||
				r.OutputTokens != tc.out || r.TotalTokens != tc.total || r.Formula != Formula {
				t.Errorf("inputs not echoed: %+v", r)
			}
			if tc.noteSubstring != "" && !strings.Contains(strings.Join(r.Notes, "; "), tc.noteSubstring) {
				t.Errorf("notes %q lack %q", r.Notes, tc.noteSubstring)
			}
		})
	}
}

// TestResultJSON: every input is echoed, and undefined figures are null.
func TestResultJSON(t *testing.T) {
	t.Parallel()
	r, err := Compute(testInputs(), 90*time.Second, 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"price_per_gpu_hour":3.5`, `"currency":"USD"`, `"price_date":"2026-11-01"`,
		`"price_source":"test fixture (not a market price)"`, `"gpus":8`, `"utilisation":0.5`, `"energy_price_per_kwh":0.2`,
		`"cost_per_1m_output_tokens":null`, `"energy_j":null`, `"j_per_output_token":null`, `"window_s":90`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

// TestComputeRejects: bad arguments fail with every problem named.
func TestComputeRejects(t *testing.T) {
	t.Parallel()
	neg := -1.0
	nan := math.NaN()
	cases := []struct {
		name       string
		in         Inputs
		window     time.Duration
		out, total int
		energy     *float64
		want       []string
	}{
		{"zero window", testInputs(), 0, 1, 1, nil, []string{"window must be > 0"}},
		{"output above total", testInputs(), time.Second, 10, 5, nil, []string{"output (10) ≤ total (5)"}},
		{"negative energy", testInputs(), time.Second, 1, 1, &neg, []string{"energy must be"}},
		{"NaN energy", testInputs(), time.Second, 1, 1, &nan, []string{"energy must be"}},
		{"empty inputs: no built-in price", Inputs{}, 0, -1, -1, nil,
			[]string{"cost.price_per_gpu_hour", "cost.currency", "cost.price_date", "cost.price_source", "cost.gpus", "cost.utilisation", "window", "tokens"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compute(tc.in, tc.window, tc.out, tc.total, tc.energy)
			if err == nil {
				t.Fatal("Compute accepted bad input")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*Inputs)
		want string // "" = valid
	}{
		{"valid", func(*Inputs) {}, ""},
		{"energy price optional", func(in *Inputs) { in.EnergyPricePerKWh, in.EnergyPriceSource = 0, "" }, ""},
		{"zero price", func(in *Inputs) { in.PricePerGPUHour = 0 }, "cost.price_per_gpu_hour"},
		{"NaN price", func(in *Inputs) { in.PricePerGPUHour = math.NaN() }, "cost.price_per_gpu_hour"},
		{"infinite price", func(in *Inputs) { in.PricePerGPUHour = math.Inf(1) }, "cost.price_per_gpu_hour"},
		{"lower-case currency", func(in *Inputs) { in.Currency = "usd" }, "cost.currency"},
		{"currency symbol", func(in *Inputs) { in.Currency = "$" }, "cost.currency"},
		{"bad date", func(in *Inputs) { in.PriceDate = "Nov 2026" }, "cost.price_date"},
		{"no source", func(in *Inputs) { in.PriceSource = "" }, "cost.price_source"},
		{"zero GPUs", func(in *Inputs) { in.GPUs = 0 }, "cost.gpus"},
		{"utilisation 0", func(in *Inputs) { in.Utilisation = 0 }, "cost.utilisation"},
		{"utilisation above 1", func(in *Inputs) { in.Utilisation = 1.2 }, "cost.utilisation"},
		{"negative energy price", func(in *Inputs) { in.EnergyPricePerKWh = -0.1 }, "cost.energy_price_per_kwh"},
		{"energy price without source", func(in *Inputs) { in.EnergyPriceSource = "" }, "cost.energy_price_source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInputs()
			tc.edit(&in)
			err := in.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

// TestYAML decodes the block as the experiment config embeds it and
// validates it: every bad or missing value is named as cost.<key> (the
// config loader, internal/yamlcheck, adds each one's line and finds
// unknown keys and wrong types, as for every other block).
func TestYAML(t *testing.T) {
	t.Parallel()
	type config struct {
		Name string  `yaml:"name"`
		Cost *Inputs `yaml:"cost"`
	}
	decode := func(src string) *config {
		var c config
		if err := yaml.Unmarshal([]byte(src), &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	c := decode("name: x\ncost:\n  price_per_gpu_hour: 3.5\n  currency: USD\n  price_date: \"2026-11-01\"\n  price_source: https://example.invalid/pricing\n  gpus: 1\n  utilisation: 0.6\n")
	if err := c.Cost.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if c.Cost.PricePerGPUHour != 3.5 || c.Cost.Utilisation != 0.6 || c.Cost.PriceSource != "https://example.invalid/pricing" {
		t.Errorf("decoded %+v", *c.Cost)
	}
	verr := decode("name: x\ncost:\n  price_per_gpu_hour: -3\n  currency: usd\n  gpus: 0\n").Cost.Validate()
	for _, w := range []string{"cost.price_per_gpu_hour: must be", "cost.currency: must be", "cost.gpus: must be", "cost.price_date: must be", "cost.utilisation: must be"} {
		if verr == nil || !strings.Contains(verr.Error(), w) {
			t.Errorf("Validate = %v, want %q", verr, w)
		}
	}
}
