package traces_test

import (
	"fmt"
	"strings"

	"github.com/transferlab/transferlab/traces"
)

// A real trace keeps its burst shape when time-scaled to a target mean rate.
func ExampleScaleToRate() {
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\r\n" +
		"2023-11-16 18:15:46.0000000,374,44\r\n" +
		"2023-11-16 18:15:46.0000000,396,109\r\n" +
		"2023-11-16 18:15:50.0000000,879,55"
	s, err := traces.Read(strings.NewReader(csv), "mini.csv", traces.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d requests, %.2f req/s\n", s.Format, len(s.Requests), s.MeanRate())
	fast, err := traces.ScaleToRate(s, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range fast.Requests {
		fmt.Println(r.ID, r.Offset, r.InputTokens, r.OutputTokens, r.SourceLine)
	}
	// Output:
	// azure: 3 requests, 0.50 req/s
	// 0 0s 374 44 2
	// 1 0s 396 109 3
	// 2 1s 879 55 4
}

// Bad rows name the file, line and field; lenient mode counts them instead.
func ExampleReadOptions_lenient() {
	csv := "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,1\n0.5,ten,2\n1.0,30,3\n"
	_, err := traces.Read(strings.NewReader(csv), "v.csv", traces.ReadOptions{})
	fmt.Println(err)
	s, _ := traces.Read(strings.NewReader(csv), "v.csv", traces.ReadOptions{Lenient: true})
	fmt.Println(len(s.Requests), s.Skipped, s.SkippedByReason)
	// Output:
	// traces: v.csv line 3 field "num_prefill_tokens": "ten" is not a non-negative integer
	// 2 1 map[bad_tokens:1]
}
