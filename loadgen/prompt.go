package loadgen

import (
	"strconv"

	"github.com/transferlab/transferlab/traces"
)

// Prompts are built so that a server's prefix cache hits exactly where the
// trace says it would. A request's prompt is a run of segments: one per
// prefix block (traces.Request.PrefixBlocks, cfg.blockTokens tokens each;
// Mooncake's hash_ids in blocks of 512), whose tokens depend on the block id
// alone, then one segment of the request's own for what its blocks do not
// cover (the whole prompt when the trace has no blocks). Two requests
// therefore share exactly the leading tokens of the blocks they share, as
// in AIPerf's and vLLM's Mooncake replay, and nothing otherwise: the first
// tokens of a segment spell out its kind (block or request) and its id, so
// two different segments differ at once, and the rest are drawn from a
// generator seeded by the same key. Repetitions of a request send the same
// prompt.
//
// Text prompts (WithPromptText, chat) follow the same rule with words from
// promptWords in place of token ids. A word is one token in common BPE
// vocabularies, so a text prompt of n words is about n tokens; the server's
// tokenizer (and a chat template) decides, which is why usage.prompt_tokens
// is recorded against the intended length (Record.PromptMismatch).

// Token ids for synthetic prompts are tokenIDBase plus an index into an
// alphabet of tokenIDAlphabet ids: [1000, 17384), valid in any vocabulary of
// ≥ 32,000 entries.
const (
	tokenIDBase     = 1000
	tokenIDAlphabet = 1 << 14
)

// promptWords are 256 common English words, each one token with its leading
// space in common BPE vocabularies (GPT-2, cl100k, Llama).
var promptWords = [256]string{
	" the", " of", " and", " to", " in", " is", " that", " for", " it", " was", " on", " with", " as", " be",
	" at", " by", " this", " from", " or", " have", " an", " they", " which", " one", " you", " were", " all",
	" we", " her", " she", " there", " would", " their", " will", " when", " who", " him", " been", " has",
	" more", " if", " no", " out", " so", " said", " what", " up", " its", " about", " into", " than", " them",
	" can", " only", " other", " new", " some", " could", " time", " these", " two", " may", " then", " do",
	" first", " any", " my", " now", " such", " like", " our", " over", " man", " me", " even", " most",
	" made", " after", " also", " did", " many", " before", " must", " through", " back", " years", " where",
	" much", " your", " way", " well", " down", " should", " because", " each", " just", " those", " people",
	" how", " too", " little", " state", " good", " very", " make", " world", " still", " own", " see", " men",
	" work", " long", " get", " here", " between", " both", " life", " being", " under", " never", " day",
	" same", " another", " know", " while", " last", " might", " us", " great", " old", " year", " off",
	" come", " since", " against", " go", " came", " right", " used", " take", " three", " states", " himself",
	" few", " house", " use", " during", " without", " again", " place", " around", " however", " home",
	" small", " found", " went", " say", " part", " once", " general", " high", " upon", " school", " every",
	" does", " got", " united", " left", " number", " course", " war", " until", " always", " away",
	" something", " fact", " though", " water", " less", " public", " put", " think", " almost", " hand",
	" enough", " far", " took", " head", " yet", " government", " system", " better", " set", " told",
	" nothing", " night", " end", " why", " called", " find", " going", " look", " asked", " later", " knew",
	" point", " next", " city", " give", " group", " toward", " young", " let", " room", " side", " social",
	" given", " present", " several", " order", " national", " second", " possible", " rather", " per", " face",
	" among", " form", " important", " often", " things", " looking", " early", " white", " case", " become",
	" large", " big", " need", " four", " within", " felt", " along", " children", " saw", " best", " church",
	" ever", " least", " power", " development", " light", " thought", " family", " interest", " want",
}

// segment is where the tokens of one prompt segment come from.
type segment struct {
	block bool   // a prefix block (else the request's own tokens)
	id    uint64 // the block id, or the request id
}

// key is the seed of the segment's generated tokens.
func (g segment) key() uint64 {
	k := g.id << 1
	if g.block {
		k |= 1
	}
	return k
}

// at returns the segment's j-th token as an index into an alphabet of n
// tokens (a power of two ≥ 4). The first header(n) tokens spell the
// segment's kind and id (kind in the top half of token 0, then the id in
// base n, low digits first), each shifted by a constant of its position so
// that small ids do not all start alike: two different segments differ
// within their first header(n) tokens. The rest come from splitmix64
// (Steele et al., "Fast splittable pseudorandom number generators", OOPSLA
// 2014) seeded by the segment.
func (g segment) at(j int, n uint64) uint64 {
	if j >= header(n) {
		return mix(g.key()*0x9e3779b97f4a7c15+uint64(j)) % n
	}
	half := n / 2
	var d uint64
	if j == 0 {
		d = g.id % half
		if g.block {
			d += half
		}
	} else {
		d = g.id / half
		for k := 1; k < j; k++ {
			d /= n
		}
		d %= n
	}
	return (d + mix(uint64(j))) % n
}

// header is how many tokens of an alphabet of n spell a segment's kind and
// 64-bit id: log2(n) − 1 bits in the first, log2(n) in each next one.
func header(n uint64) int {
	bits, h := bitsOf(n)-1, 1
	for ; bits < 64; h++ {
		bits += bitsOf(n)
	}
	return h
}

// bitsOf is log2(n) for a power of two n.
func bitsOf(n uint64) int {
	b := 0
	for ; n > 1; n >>= 1 {
		b++
	}
	return b
}

// mix is splitmix64's output function.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// promptSegments calls tok(g, j) for every prompt token of req in order:
// token i of the prompt is token j of segment g. Block ids that do not parse
// end the blocks (validateSchedule refuses such schedules).
func promptSegments(req *traces.Request, blockTokens int, tok func(g segment, j int)) {
	i, n := 0, req.InputTokens
	if blockTokens > 0 {
		for rest := req.PrefixBlocks; rest != "" && i < n; {
			field := rest
			if k := indexComma(rest); k >= 0 {
				field, rest = rest[:k], rest[k+1:]
			} else {
				rest = ""
			}
			id, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				break
			}
			g := segment{block: true, id: uint64(id)}
			for j := 0; j < blockTokens && i < n; j, i = j+1, i+1 {
				tok(g, j)
			}
		}
	}
	g := segment{id: uint64(req.ID)}
	for j := 0; i < n; j, i = j+1, i+1 {
		tok(g, j)
	}
}

func indexComma(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return i
		}
	}
	return -1
}

// appendPromptIDs appends req's prompt as comma-separated token ids in
// [tokenIDBase, tokenIDBase+tokenIDAlphabet).
func appendPromptIDs(b []byte, req *traces.Request, blockTokens int) []byte {
	first := true
	promptSegments(req, blockTokens, func(g segment, j int) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendUint(b, tokenIDBase+g.at(j, tokenIDAlphabet), 10)
	})
	return b
}

// appendPromptText appends req's prompt as words of promptWords (JSON-safe,
// no escapes needed), the first without its leading space.
func appendPromptText(b []byte, req *traces.Request, blockTokens int) []byte {
	first := true
	promptSegments(req, blockTokens, func(g segment, j int) {
		w := promptWords[g.at(j, uint64(len(promptWords)))]
		if first {
			w, first = w[1:], false
		}
		b = append(b, w...)
	})
	return b
}
