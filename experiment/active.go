package experiment

import (
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/loadgen"
)

// ActiveFromRecordsFile reads the records.jsonl at path and returns the
// union of the requests' [sent, end] intervals moved by offset onto a
// profile's clock (what `transferlab profile --records` counts as active
// wall time). A request never sent carries no active time; one without an
// end counts until its last token event. No such interval is an error.
func ActiveFromRecordsFile(path string, offset time.Duration) ([]amdahl.Interval, error) {
	recs, err := loadgen.ReadRecordsFile(path)
	if err != nil {
		return nil, err
	}
	spans := make([]amdahl.Interval, 0, len(recs))
	for _, r := range recs {
		end := r.EndAt
		if end == 0 && len(r.Events) > 0 {
			end = r.Events[len(r.Events)-1].At
		}
		if r.State == loadgen.StateNotSent || end <= r.SentAt {
			continue
		}
		spans = append(spans, amdahl.Interval{Start: r.SentAt, End: end})
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("%s: no request with a [sent, end] interval", path)
	}
	return amdahl.Shift(amdahl.Union(spans), offset), nil
}
