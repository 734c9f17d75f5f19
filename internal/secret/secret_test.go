package secret

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:SECRET@collector:4318/x": "https://REDACTED@collector:4318/x",
		"http://tok@h":                         "http://REDACTED@h",
		"http://h:8000/v1":                     "http://h:8000/v1",
		"":                                     "",
		"http://127.0.0.1:18771/?api-key=QuerySECRET99":              "http://127.0.0.1:18771/?api-key=REDACTED",
		"http://a:PW@h/v1?token=QuerySECRET99&x=&QuerySECRET99#frag": "http://REDACTED@h/v1?token=REDACTED&x=REDACTED&REDACTED#REDACTED",
		"http://h/%zz?key=QuerySECRET99":                             "http://h/%zz?key=REDACTED",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"KEY": "sk-123456", "EMPTY": ""}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got, used, err := Expand("Bearer ${KEY}${EMPTY}", look)
	if err != nil || got != "Bearer sk-123456" || len(used) != 1 || used[0] != "sk-123456" {
		t.Errorf("Expand = %q %v %v", got, used, err)
	}
	_, _, err = Expand("x ${NOPE} ${ALSO}", look)
	if !errors.Is(err, ErrUnset) || !strings.Contains(err.Error(), "${NOPE}") || !strings.Contains(err.Error(), "${ALSO}") {
		t.Errorf("unset: %v", err)
	}
	if s, _, err := Expand("$HOME and $${X", look); err != nil || s != "$HOME and $${X" {
		t.Errorf("no reference: %q %v", s, err)
	}
}

func TestScrubber(t *testing.T) {
	var s Scrubber
	s.Add("sk-123456", "ab", "Bearer sk-123456")
	text := `{"h":"Bearer sk-123456","u":"see https://me:pw@host/p and sk-123456","short":"ab"}`
	got := s.String(text)
	for _, bad := range []string{"sk-123456", "me:pw"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q left in %s", bad, got)
		}
	}
	if !strings.Contains(got, `"short":"ab"`) || !strings.Contains(got, `"h":"REDACTED"`) {
		t.Errorf("scrubbed text: %s", got)
	}
	if b := string(s.Bytes([]byte(text))); b != got {
		t.Errorf("Bytes %s != String %s", b, got)
	}
	var nilS *Scrubber
	if got := nilS.String("http://a:b@h"); got != "http://REDACTED@h" {
		t.Errorf("nil scrubber: %s", got)
	}
	err := s.Error(errors.Join(errUnsetForTest, errors.New("token sk-123456")))
	if strings.Contains(err.Error(), "sk-123456") || !errors.Is(err, errUnsetForTest) {
		t.Errorf("Error: %v", err)
	}
}

var errUnsetForTest = errors.New("sentinel")

// TestWriterSplitSecret: a secret written in two pieces is still scrubbed.
func TestWriterSplitSecret(t *testing.T) {
	var s Scrubber
	s.Add("sk-123456")
	var out bytes.Buffer
	w := s.Writer(&out)
	for _, p := range []string{"line one sk-12", "3456 end\nsecond ", "sk-123456"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "line one REDACTED end\nsecond REDACTED"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
