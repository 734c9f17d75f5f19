package loadgen

import (
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/traces"
)

// Prompts are built so that a server's prefix cache hits exactly where the
// trace says it would. A request's prompt is a run of segments: one per
// prefix block (traces.Request.PrefixBlocks, cfg.blockTokens tokens each;
// Mooncake's hash_ids in blocks of 512), whose tokens depend on the block id
// alone, then one segment of the request's own for what its blocks do not
// cover (the whole prompt when the trace has no blocks). Two requests
// therefore share the leading tokens of the blocks they share, as in
// AIPerf's and vLLM's Mooncake replay, and nothing else but for chance
// agreement in a few tokens where their next segments start: the first
// header(n) tokens of a segment spell out its kind (block or request) and
// its id, so two different segments differ within them (4 of 5 token ids,
// 8 of 9 words may agree), and the rest are drawn from a generator seeded by
// the same key. Repetitions of a request send the same prompt.
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

// at returns the segment's j-th token as an index into alphabet a of n
// tokens (a power of two ≥ 4). The first header(n) tokens spell the
// segment's kind and id (kind in the top half of token 0, then the id in
// base n, low digits first), each shifted by a constant of its position so
// that small ids do not all start alike: two different segments differ
// within their first header(n) tokens. The rest come from splitmix64
// (Steele et al., "Fast splittable pseudorandom number generators", OOPSLA
// 2014) seeded by the segment.
func (g segment) at(j int, a alphabet) uint64 {
	n := a.n
	if j >= a.header {
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

// alphabet is a power-of-two number n of tokens and its header(n).
type alphabet struct {
	n      uint64
	header int
}

// The alphabets of token-id and text prompts.
var (
	idAlphabet   = alphabet{tokenIDAlphabet, header(tokenIDAlphabet)}
	wordAlphabet = alphabet{uint64(len(promptWords)), header(uint64(len(promptWords)))}
)

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

// promptIter walks a request's prompt token by token: token i of the
// prompt is token j of segment g. Block ids that do not parse end the
// blocks (validateSchedule refuses such schedules).
type promptIter struct {
	rest        string // block ids not yet started
	blockTokens int
	left        int // prompt tokens still to come
	g           segment
	j           int
	own         uint64 // the request id
}

func newPromptIter(req *traces.Request, blockTokens int) promptIter {
	it := promptIter{left: req.InputTokens, blockTokens: blockTokens, own: uint64(req.ID)}
	if blockTokens > 0 {
		it.rest = req.PrefixBlocks
	}
	it.open()
	return it
}

// open starts the next segment: the next block, or the request's own once
// the blocks are spent.
func (it *promptIter) open() {
	it.j = -1
	if it.rest != "" {
		field := it.rest
		if k := strings.IndexByte(field, ','); k >= 0 {
			field, it.rest = field[:k], field[k+1:]
		} else {
			it.rest = ""
		}
		if id, err := strconv.ParseInt(field, 10, 64); err == nil {
			it.g = segment{block: true, id: uint64(id)}
			return
		}
		it.rest = ""
	}
	it.g = segment{id: it.own}
}

// next advances to the next token; false once the prompt is complete.
func (it *promptIter) next() bool {
	if it.left == 0 {
		return false
	}
	it.left--
	it.j++
	if it.g.block && it.j == it.blockTokens {
		it.open()
		it.j = 0
	}
	return true
}

// appendPromptIDs appends req's prompt as comma-separated token ids in
// [tokenIDBase, tokenIDBase+tokenIDAlphabet).
func appendPromptIDs(b []byte, req *traces.Request, blockTokens int) []byte {
	for it, first := newPromptIter(req, blockTokens), true; it.next(); first = false {
		if !first {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, tokenIDBase+it.g.at(it.j, idAlphabet), 10)
	}
	return b
}

// appendPromptText appends req's prompt as words of promptWords (JSON-safe,
// no escapes needed), the first without its leading space.
func appendPromptText(b []byte, req *traces.Request, blockTokens int) []byte {
	for it, first := newPromptIter(req, blockTokens), true; it.next(); first = false {
		w := promptWords[it.g.at(it.j, wordAlphabet)]
		if first {
			w = w[1:]
		}
		b = append(b, w...)
	}
	return b
}
