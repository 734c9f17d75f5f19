package servers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/loadgen"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://h:8000", ""},
		{"https://h/api/", ""},
		{"", "required"},
		{"localhost:8000", "needs an http:// or https:// scheme"},
		{"http://", "has no host"},
		{"http://h/?q=1", "takes no query or fragment"},
		{"http://h:8000/v1", "without /v1"},
		{"http://user:pw-SECRET@h/v1", "REDACTED"},
		{"http://h/?api-key=pw-SECRET", "?api-key=REDACTED\": a base URL takes no query"},
		{"http://h/v1?token=pw-SECRET#pw-SECRET", "takes no query or fragment"},
	} {
		err := CheckURL(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want nil", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%q) = %v, want an error saying %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "pw-SECRET"):
			t.Errorf("CheckURL(%q) quotes the password: %v", tc.url, err)
		}
	}
}

// modelServer answers GET /v1/models with models (a 401 without the
// header key when key is set) and GET /version with version.
func modelServer(t *testing.T, key, models, version string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Server", "test-server/2")
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, models)
		case "/version":
			if version == "" {
				http.NotFound(w, r)
				return
			}
			_, _ = io.WriteString(w, version)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestProbe: a server's description (models, /version, Server header) and
// the model picked; refused credentials, a body that is no model list and
// an unclear model are errors saying which, never quoting a header value.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	one := modelServer(t, "", `{"data":[{"id":"m1"}]}`, `{"version":"0.9"}`)
	got, err := NewProber(nil, nil, loadgen.EndpointCompletions).Probe(ctx, one+"/", "")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != one || got.Model != "m1" || got.Desc.ServerHeader != "test-server/2" || got.Desc.Version == nil {
		t.Errorf("target %+v", got)
	}
	if a := got.About(); !strings.Contains(a, "model m1") || !strings.Contains(a, "Server: test-server/2") || !strings.Contains(a, `/version: {"version":"0.9"}`) {
		t.Errorf("About() = %q", a)
	}

	two := modelServer(t, "", `{"data":[{"id":"a"},{"id":"b"}]}`, "")
	if _, err := NewProber(nil, nil, loadgen.EndpointCompletions).Probe(ctx, two, ""); err == nil || !strings.Contains(err.Error(), "serves 2 models (a, b)") {
		t.Errorf("two models, none requested: %v", err)
	}
	if got, err := NewProber(nil, nil, loadgen.EndpointCompletions).Probe(ctx, two, "b"); err != nil || got.Model != "b" {
		t.Errorf("two models, b requested: %+v, %v", got, err)
	}
	if _, err := NewProber(nil, nil, loadgen.EndpointCompletions).Probe(ctx, modelServer(t, "", `{"data":[]}`, ""), ""); err == nil || !strings.Contains(err.Error(), "lists no model") {
		t.Errorf("no model: %v", err)
	}
	if _, err := NewProber(nil, nil, loadgen.EndpointCompletions).Probe(ctx, modelServer(t, "", `<html>`, ""), ""); err == nil || !strings.Contains(err.Error(), "not an OpenAI model list") {
		t.Errorf("not a model list: %v", err)
	}

	locked := modelServer(t, "sk-right", `{"data":[{"id":"m1"}]}`, "")
	_, err = NewProber(http.Header{"Authorization": {"Bearer sk-wrong-SECRET"}}, nil, loadgen.EndpointCompletions).Probe(ctx, locked, "")
	if err == nil || !strings.Contains(err.Error(), "refused the credentials: GET /v1/models answered 401") ||
		!strings.Contains(err.Error(), "Authorization (values not shown)") || strings.Contains(err.Error(), "sk-wrong-SECRET") {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := NewProber(http.Header{"Authorization": {"Bearer sk-right"}}, nil, loadgen.EndpointCompletions).Probe(ctx, locked, ""); err != nil {
		t.Errorf("right key: %v", err)
	}
}

// TestCompletionCheck: a server that lists its models to anyone but answers
// 401 to completions without the key is refused by Probe, naming the route
// and the headers sent, never their values; with the key the check is
// recorded (max_tokens 1, not counted) on the run's route, chat included.
func TestCompletionCheck(t *testing.T) {
	type seen struct {
		path string
		body map[string]any
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models":
			_, _ = io.WriteString(w, `{"data":[{"id":"m1"}]}`)
			return
		case r.Method != http.MethodPost:
			http.NotFound(w, r)
			return
		}
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		got <- seen{r.URL.Path, b}
		if r.Header.Get("Authorization") != "Bearer sk-right" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"bad key `+r.Header.Get("Authorization")+`"}`)
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"text":"!"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`)
	}))
	defer srv.Close()
	ctx := context.Background()

	_, err := NewProber(http.Header{"Authorization": {"Bearer sk-wrong-SECRET"}}, nil, loadgen.EndpointCompletions).Probe(ctx, srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "refused the credentials on a completion: POST /v1/completions (max_tokens 1") ||
		!strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "Authorization (values not shown)") || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("wrong key: %v", err)
	}
	<-got

	for _, ep := range []loadgen.Endpoint{loadgen.EndpointCompletions, loadgen.EndpointChat} {
		tg, err := NewProber(http.Header{"Authorization": {"Bearer sk-right"}}, nil, ep).Probe(ctx, srv.URL, "")
		if err != nil {
			t.Fatalf("%s, right key: %v", ep, err)
		}
		c := tg.Desc.CompletionCheck
		if c == nil || c.Status != http.StatusOK || c.MaxTokens != 1 || c.Counted || c.Path != ep.Path() || c.Problem() != "" ||
			c.PromptTokens == nil || *c.PromptTokens != 2 || c.CompletionTokens == nil || *c.CompletionTokens != 1 {
			t.Errorf("%s: check %+v", ep, c)
		}
		s := <-got
		_, chat := s.body["messages"]
		if s.path != ep.Path() || s.body["max_tokens"] != 1.0 || s.body["stream"] != false || s.body["model"] != "m1" || chat != (ep == loadgen.EndpointChat) {
			t.Errorf("%s: the check sent %s %v", ep, s.path, s.body)
		}
	}
}

// TestNon200AnswerSaysBodyAndPath: a server that answers GET /v1/models
// with 404 and an empty body is an error that says the body was empty and
// which URL path was asked (the base URL's own path included), with no
// dangling colon and no credential from the URL; a body is quoted.
func TestNon200AnswerSaysBodyAndPath(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/teapot/v1/models" {
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "short and stout\n")
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	ctx := context.Background()
	p := NewProber(http.Header{"Authorization": {"Bearer sk-SECRET-9"}}, nil, loadgen.EndpointCompletions)
	base := strings.Replace(srv.URL, "http://", "http://user:pw-SECRET@", 1)
	_, err := p.Probe(ctx, base+"/api/", "")
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{"GET /api/v1/models answered 404 Not Found with an empty body", "server's root"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "Found: ") || strings.HasSuffix(strings.TrimSpace(msg), ":") || strings.Contains(msg, "SECRET") {
		t.Errorf("dangling colon or a secret: %q", msg)
	}
	if _, err := p.Probe(ctx, srv.URL+"/teapot", ""); err == nil || !strings.Contains(err.Error(), "GET /teapot/v1/models answered 418 I'm a teapot: short and stout") {
		t.Errorf("a body is quoted: %v", err)
	}
	c := &CompletionCheck{Path: "/v1/completions", Status: http.StatusNotFound}
	if got := c.Problem(); !strings.Contains(got, "answered 404 Not Found with an empty body") || strings.Contains(got, "Found: ") {
		t.Errorf("Problem() = %q", got)
	}
}

// TestAboutVersionReadable: a server's /version reaches the report as it
// reads (">=", "&"), not JSON-escaped.
func TestAboutVersionReadable(t *testing.T) {
	t.Parallel()
	got := Target{URL: "http://h:1", Model: "m", Desc: Description{Version: map[string]any{"engine": "x>=1 & <2"}}}.About()
	if want := `/version: {"engine":"x>=1 & <2"}`; !strings.Contains(got, want) {
		t.Errorf("About %q lacks %q", got, want)
	}
}
