package loadgen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// slowDecode is the reference: encoding/json into the same struct.
func slowDecode(data []byte) (chunk, error) {
	var c chunk
	c.reset()
	err := json.Unmarshal(data, &c)
	return c, err
}

// sameChunk compares the fields the client uses.
func sameChunk(a, b *chunk) bool {
	if len(a.Choices) != len(b.Choices) || a.Usage != b.Usage || a.Object != b.Object {
		return false
	}
	for i := range a.Choices {
		if a.Choices[i] != b.Choices[i] {
			return false
		}
	}
	return a.errorText() == b.errorText()
}

// testdataPayloads returns every data payload in testdata/sse.
func testdataPayloads(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "sse", "*.txt"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n")) {
			if p, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				p = bytes.TrimPrefix(p, []byte(" "))
				if len(p) > 0 && p[0] == '{' {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

var chunkEdgeCases = []string{
	`{"choices":[{"text":"a\"b","finish_reason":"len\u0067th"}]}`,
	`{"choices":[{"delta":{"content":"","reasoning":"r"}}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":1.5,"completion_tokens":2}}`,
	`{"choices":null,"usage":{"completion_tokens":7,"extra":{"a":[1,2,{"b":null}]}}}`,
	`  {"error":{"message":"boom","code":500}}  `,
	`{"object":"error","message":"engine died"}`,
	`{"choices":[{"text":null,"logprobs":{"tokens":["a","b"],"top":[{"x":-1.5e-3}]}}]}`,
	`{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
	`{"choices":[{"text":"x"}]} trailing`,
	`{"choices":[{"text":"x"}`,
	`[]`,
	`{"choices":[{"text":true}]}`,
	// Invalid UTF-8 in a string: encoding/json replaces it with U+FFFD.
	"{\"choices\":[{\"text\":\"a\",\"finish_reason\":\"st\x90op\"}]}",
	`{"choices":[{"text":"a","token_ids":[1,2,[3],{"x":4}]}]}`,
	`{"choices":[{"text":"a","token_ids":[]},{"text":"b","token_ids":null},{"text":"c","token_ids":7}]}`,
	`{"choices":[{"text":"a","token_ids":[1,]}]}`,
}

func TestDecodeChunkAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	inputs := testdataPayloads(t)
	for _, s := range chunkEdgeCases {
		inputs = append(inputs, []byte(s))
	}
	for _, in := range inputs {
		t.Run(string(clip(in, 60)), func(t *testing.T) {
			var fast chunk
			ferr := decodeChunk(in, &fast)
			slow, serr := slowDecode(in)
			if (ferr != nil) != (serr != nil) {
				t.Fatalf("fast err %v, encoding/json err %v", ferr, serr)
			}
			if serr == nil && !sameChunk(&fast, &slow) {
				t.Errorf("fast %+v\nslow %+v", fast, slow)
			}
		})
	}
}

func FuzzDecodeChunk(f *testing.F) {
	fuzzing.Budget(f)
	for _, p := range testdataPayloads(f) {
		if len(p) <= maxFuzzInput {
			f.Add(p)
		}
	}
	for _, s := range chunkEdgeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			return
		}
		var fast chunk
		ferr := decodeChunk(in, &fast)
		slow, serr := slowDecode(in)
		if serr == nil && ferr == nil && !sameChunk(&fast, &slow) {
			t.Errorf("disagree on %q:\nfast %+v\nslow %+v", in, fast, slow)
		}
		if serr == nil && ferr != nil {
			t.Errorf("fast path failed on valid input %q: %v", in, ferr)
		}
	})
}

// TestChunkStreamSplits: every testdata payload and edge case, decoded as
// it arrives (chunkStream) in pushes of 1 to 8 bytes kept in pieces of 1 to
// 8 bytes, gives the fast scanner's verdict and chunk over the whole
// payload: the seams of reads and pieces fall everywhere.
func TestChunkStreamSplits(t *testing.T) {
	t.Parallel()
	payloads := testdataPayloads(t)
	for _, s := range chunkEdgeCases {
		payloads = append(payloads, []byte(s))
	}
	var d chunkStream
	defer d.release()
	for _, data := range payloads {
		var whole chunk
		ws := scanner{b: data}
		werr := ws.chunk(&whole)
		for piece := 1; piece <= 8; piece++ {
			for step := 1; step <= 8; step++ {
				d.begin(piece)
				for i := 0; i < len(data); i += step {
					d.push(data[i:min(len(data), i+step)], i+step >= len(data))
				}
				if len(data) == 0 {
					d.push(nil, true)
				}
				got, err := d.result()
				if (err == nil) != (werr == nil) || err == nil && (!sameChunk(got, &whole) || !bytes.Equal(got.Error, whole.Error) || !bytes.Equal(got.Message, whole.Message)) {
					t.Fatalf("%q in %d-byte pushes, %d-byte pieces: %+v, %v; whole: %+v, %v", data, step, piece, *got, err, whole, werr)
				}
				if !bytes.Equal(d.bytes(), data) {
					t.Fatalf("%q in %d-byte pushes, %d-byte pieces: kept %q", data, step, piece, d.bytes())
				}
			}
		}
	}
}
