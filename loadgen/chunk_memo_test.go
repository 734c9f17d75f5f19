package loadgen

import (
	"testing"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// memoSequences are streams of payloads, each decoded in order through one
// chunkMemo: text changes (longer, shorter, empty, capitals, non-ASCII),
// bytes that would end or escape the string, a finish reason, a usage
// change, repeated keys, a null text, a second choice, an error.
var memoSequences = [][]string{
	{
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" Hello, wörld","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a\"b","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a\nb","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a"b","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a` + "\x01" + `","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":"length"}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
	},
	{
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"delta":{"content":"Hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`{"choices":[{"delta":{"content":"there"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
		`{"choices":[{"delta":{"content":"there"}}],"usage":{"prompt_tokens":3,"completion_tokens":3}}`,
		`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"hmm, ok"}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"hmm, ok"},"delta":{"content":null}}]}`,
		`{"choices":[{"delta":{"content":"x"}}],"choices":[{"index":0}]}`,
		`{"choices":[{"delta":{"content":"y"}}],"choices":[{"index":0}]}`,
		`{"choices":[{"text":"x"},{"text":"y"}]}`,
		`{"choices":[{"text":"z"},{"text":"y"}]}`,
		`{"choices":[{"text":"x","text":null}]}`,
		`{"choices":[{"text":"xy","text":null}]}`,
		`{"choices":[{"text":"x"}]}`,
		`{"choices":[{"text":"x"}],"error":"boom"}`,
		`{"choices":[{"text":"xyz"}]}`,
		`{"choices":[{"text":"xyz"}]} trailing`,
		`{"choices":[{"text":"xyz"}]}`,
		`{"choices":[{"text":"xyz"}]`,
	},
}

// checkMemoStep decodes in through m into c and fails unless the result
// is decodeChunk's.
func checkMemoStep(t *testing.T, m *chunkMemo, c *chunk, in []byte) {
	t.Helper()
	merr := m.decode(in, c)
	var want chunk
	werr := decodeChunk(in, &want)
	if (merr != nil) != (werr != nil) || merr != nil && merr.Error() != werr.Error() {
		t.Fatalf("%q: memo err %v, decodeChunk err %v", in, merr, werr)
	}
	if werr == nil && !sameChunk(c, &want) {
		t.Fatalf("%q:\nmemo %+v\nwant %+v", in, *c, want)
	}
}

func TestChunkMemoAgreesWithDecode(t *testing.T) {
	t.Parallel()
	hits := 0
	for _, seq := range memoSequences {
		var m chunkMemo
		var c chunk
		for _, p := range seq {
			if m.field != nil {
				if _, ok := m.replay([]byte(p)); ok {
					hits++
				}
			}
			checkMemoStep(t, &m, &c, []byte(p))
		}
	}
	// The testdata payloads (servers' captured events), in their order.
	var m chunkMemo
	var c chunk
	for _, p := range testdataPayloads(t) {
		checkMemoStep(t, &m, &c, p)
	}
	if hits < 5 { // the replays the sequences are built to take
		t.Errorf("%d memo replays, want at least 5: the memo is not taken", hits)
	}
}

// FuzzChunkMemo decodes two payloads in turn through one chunkMemo: the
// second must decode as decodeChunk decodes it alone.
func FuzzChunkMemo(f *testing.F) {
	fuzzing.Budget(f)
	for _, seq := range memoSequences {
		for i := 1; i < len(seq); i++ {
			f.Add([]byte(seq[i-1]), []byte(seq[i]))
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a) > maxFuzzInput || len(b) > maxFuzzInput {
			return
		}
		var m chunkMemo
		var c chunk
		_ = m.decode(a, &c)
		checkMemoStep(t, &m, &c, b)
	})
}
