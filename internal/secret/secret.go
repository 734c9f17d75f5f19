// Package secret keeps credentials out of everything transferlab writes.
//
// Three things are secret: request header values (they carry API keys),
// anything expanded from the environment (${VAR} in a config), and the
// userinfo, query values and fragment of a URL (https://user:pass@host,
// ?api_key=…; URL redacts them). A Scrubber holds one run's
// secret values; its Bytes/String methods are the one function every
// writer of the run (results.json, records.jsonl, report.md, report.html,
// logs, the console) passes its output through. URL userinfo is redacted
// wherever it appears in text, whether or not the Scrubber was told of it.
package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces every secret in what transferlab writes.
const Redacted = "REDACTED"

// userinfo matches the userinfo part of a URL in free text: scheme://user[:pass]@.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@\s"'<>\\]+@`)

// queryValue matches one query parameter's value in free text: [?&]key=value.
var queryValue = regexp.MustCompile(`([?&][^=&#?\s"'<>\\]*=)[^&#\s"'<>\\]+`)

// URL returns raw with its userinfo (user and password), each query value
// and its fragment replaced by Redacted (an API key often rides in the
// query): "https://u:p@h/x?api_key=k#f" →
// "https://REDACTED@h/x?api_key=REDACTED#REDACTED"; a query parameter
// without "=" is replaced whole. Text without a scheme (a config value such
// as "[3 10]") is returned as it is, scrubbed of anything that looks like URL
// userinfo; text with "://" that does not parse as a URL is scrubbed of
// userinfo and of anything that looks like a query value.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		out := userinfo.ReplaceAllString(raw, "${1}"+Redacted+"@")
		if strings.Contains(raw, "://") {
			out = queryValue.ReplaceAllString(out, "${1}"+Redacted)
		}
		return out
	}
	if u.Scheme == "" || (u.User == nil && u.RawQuery == "" && u.Fragment == "" && u.RawFragment == "") {
		return userinfo.ReplaceAllString(raw, "${1}"+Redacted+"@")
	}
	if u.User != nil {
		u.User = url.User(Redacted)
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			if k, _, ok := strings.Cut(p, "="); ok {
				params[i] = k + "=" + Redacted
			} else if p != "" {
				params[i] = Redacted
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Redacted, ""
	}
	return u.String()
}

// Headers returns a copy of h with every value replaced by Redacted (nil for
// an empty h).
func Headers(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Redacted
	}
	return out
}

// varRef matches ${NAME} (NAME: letters, digits, underscore; not starting with a digit).
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ErrUnset is wrapped by Expand's error for a referenced variable that is not set.
var ErrUnset = errors.New("environment variable is not set")

// Refs are the ${NAME} references in s as written ("${NAME}"), in order:
// names, never values, fit for an error.
func Refs(s string) []string {
	return varRef.FindAllString(s, -1)
}

// Expand replaces each ${NAME} in s by lookup(NAME). A NAME lookup does not
// find is an error wrapping ErrUnset that names it; the value itself never
// appears in an error. It also returns the values it substituted (non-empty
// ones), for a Scrubber.
func Expand(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var (
		errs []error
		used []string
	)
	out := varRef.ReplaceAllStringFunc(s, func(m string) string {
		name := varRef.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		if !ok {
			errs = append(errs, fmt.Errorf("${%s}: %w", name, ErrUnset))
			return m
		}
		if v != "" {
			used = append(used, v)
		}
		return v
	})
	return out, used, errors.Join(errs...)
}

// minSecret is the shortest value a Scrubber replaces: shorter ones ("1",
// "on") would deface ordinary text and are no credential.
const minSecret = 4

// Scrubber replaces a run's secret values, and URL userinfo, in text. The
// zero value scrubs URL userinfo only. It is safe for concurrent use.
type Scrubber struct {
	mu   sync.RWMutex
	vals []string // longest first, so a value containing another goes whole
}

// Add registers secret values (header values after expansion, expanded
// environment values). Values shorter than 4 bytes are ignored.
func (s *Scrubber) Add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if len(v) >= minSecret && !slices.Contains(s.vals, v) {
			s.vals = append(s.vals, v)
		}
	}
	slices.SortFunc(s.vals, func(a, b string) int { return len(b) - len(a) })
}

// String returns t with every registered value and all URL userinfo replaced by Redacted.
func (s *Scrubber) String(t string) string {
	if s != nil {
		s.mu.RLock()
		for _, v := range s.vals {
			t = strings.ReplaceAll(t, v, Redacted)
		}
		s.mu.RUnlock()
	}
	return userinfo.ReplaceAllString(t, "${1}"+Redacted+"@")
}

// Bytes is String for a byte slice (b is not modified).
func (s *Scrubber) Bytes(b []byte) []byte {
	if s != nil {
		s.mu.RLock()
		for _, v := range s.vals {
			b = bytes.ReplaceAll(b, []byte(v), []byte(Redacted))
		}
		s.mu.RUnlock()
	}
	return userinfo.ReplaceAll(b, []byte("${1}"+Redacted+"@"))
}

// Error returns err with its text scrubbed (nil for nil). errors.Is and
// errors.As still see the original chain through Unwrap.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	return scrubbedError{text: s.String(err.Error()), err: err}
}

type scrubbedError struct {
	text string
	err  error
}

func (e scrubbedError) Error() string { return e.text }
func (e scrubbedError) Unwrap() error { return e.err }

// Writer returns a writer that scrubs whole lines before passing them to w:
// a secret split across two Write calls is still found. Close writes a last
// line without its newline; it does not close w.
func (s *Scrubber) Writer(w io.Writer) io.WriteCloser {
	return &lineWriter{s: s, w: w}
}

type lineWriter struct {
	s   *Scrubber
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	i := bytes.LastIndexByte(l.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	if _, err := l.w.Write(l.s.Bytes(l.buf[:i+1])); err != nil {
		return 0, err
	}
	l.buf = append(l.buf[:0], l.buf[i+1:]...)
	return len(p), nil
}

func (l *lineWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.s.Bytes(l.buf))
	l.buf = l.buf[:0]
	return err
}
