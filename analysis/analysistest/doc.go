// Package analysistest holds the fixtures the tests of report, analysis,
// render and canary share: synthetic loadgen.Records (SynthRecords,
// WindowRecords, HandRecords), hand-made cells (MkCell, TwoArms, AARun) and
// a fully analysed Results (FixtureResults), plus the tolerance helper Near.
// Only tests import it.
package analysistest
