package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// request is one request a client sent, and the status it was answered with (0: no answer).
type request struct {
	method string
	path   string
	query  url.Values
	status int
}

// watch reports whether the request is a watch (`?watch=true`).
func (r request) watch() bool {
	return r.query.Get("watch") == "true" || r.query.Get("watch") == "1"
}

func (r request) String() string {
	return fmt.Sprintf("%s %s?%s -> %d", r.method, r.path, r.query.Encode(), r.status)
}

// recorder records the requests of the clients made with it (env.clients).
type recorder struct {
	mu       sync.Mutex
	requests []request
}

func (rec *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := rt.RoundTrip(req)
		r := request{method: req.Method, path: req.URL.Path, query: req.URL.Query()}
		if err == nil {
			r.status = res.StatusCode
		}
		rec.mu.Lock()
		rec.requests = append(rec.requests, r)
		rec.mu.Unlock()
		return res, err
	})
}

// collection returns the requests sent to the collection of Flunders in `namespace` (lists and
// watches).
func (rec *recorder) collection(namespace string) []request {
	path := fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", flunders.Group, flunders.Version, namespace, flunders.Resource)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []request
	for _, r := range rec.requests {
		if r.method == http.MethodGet && r.path == path {
			out = append(out, r)
		}
	}
	return out
}

func describe(requests []request) string {
	lines := make([]string, len(requests))
	for i, r := range requests {
		lines[i] = "  " + r.String()
	}
	return strings.Join(lines, "\n")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
