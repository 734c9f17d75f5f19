package render

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
)

// minusNumber is a number signed with U+2212 (−) rather than the ASCII
// hyphen-minus every other figure (Go's %+f, report.Num) prints.
var minusNumber = regexp.MustCompile(`−[0-9]`)

// TestOneMinusSign: every negative figure in report.md and report.html
// (the answer's changes included: "-0.457 USD (-0.8 %") carries the same
// sign, the ASCII hyphen-minus; "−" stays an operator between words
// ("candidate − baseline").
func TestOneMinusSign(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"report.md": md.Bytes(), "report.html": html.Bytes()} {
		if m := minusNumber.FindAll(b, 3); len(m) > 0 {
			i := minusNumber.FindIndex(b)
			t.Errorf("%s signs a figure with U+2212: %q", name, b[max(i[0]-40, 0):min(i[1]+40, len(b))])
		}
		if !bytes.Contains(b, []byte("-0.457 USD (-0.8 %")) {
			t.Errorf("%s lacks the cost change as -0.457 USD (-0.8 %%", name)
		}
	}
}
