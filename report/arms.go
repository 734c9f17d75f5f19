package report

import "strings"

// AAArm names the A/A replicate of the baseline arm: the baseline's own
// server configuration run a second time in every block, interleaved like
// the arms (RunOrder), so the run measures how far the baseline moves
// against itself. "~" cannot appear in a configured arm name.
func AAArm(baseline string) string { return baseline + "~aa" }

// IsAAArm reports whether arm is some baseline's A/A replicate.
func IsAAArm(arm string) bool { return strings.HasSuffix(arm, "~aa") }

// CeilingLabel is how every rendering names the ceiling arm's role.
const CeilingLabel = "ceiling: timing-only ablation, the target's work removed, outputs meaningless, never validated, no verdict"

// ArmLabel is arm as tables print it: the ceiling arm carries its label.
func (r Results) ArmLabel(arm string) string {
	if arm != "" && arm == r.Ceiling {
		return arm + " (" + CeilingLabel + ")"
	}
	if IsAAArm(arm) {
		return arm + " (A/A replicate)"
	}
	return arm
}
