// Command prefixproxy serves a server under a path, as code-server's
// /proxy/<port>/, Coder's path-based apps or JupyterHub's server proxy do,
// for the UI test 26-path-prefix.test.mjs.
//
// A request for <prefix>/x goes to <target>/x with the prefix stripped;
// <prefix> alone is redirected to <prefix>/, and anything outside the
// prefix is a 404, so a page that asks for a URL from the proxy's root
// fails loudly. Like those proxies it passes the Host the browser sent on
// (not the target's) and adds X-Forwarded-*; WebSocket upgrades go
// through too (httputil.ReverseProxy handles Upgrade).
//
//	go run ./web/test/prefixproxy -listen 127.0.0.1:0 -target http://127.0.0.1:8080 -prefix /proxy/8080/
//
// It prints "prefixproxy listening on http://<addr><prefix>" to stdout
// once it accepts connections, then one line per response it passes back:
// method, path (as the server saw it) and status.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("target", "http://127.0.0.1:8080", "the server behind the proxy")
	prefix := flag.String("prefix", "/proxy/8080/", "the path the server is served under")
	flag.Parse()

	to, err := url.Parse(*target)
	if err != nil || to.Scheme == "" || to.Host == "" {
		log.Fatalf("prefixproxy: -target %q: want scheme://host:port", *target)
	}
	p := "/" + strings.Trim(*prefix, "/") + "/"

	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(to)           // also points Host at the target...
			r.Out.Host = r.In.Host // ...but these proxies pass the browser's on.
			r.SetXForwarded()
		},
		ModifyResponse: func(res *http.Response) error {
			fmt.Printf("%s %s %d\n", res.Request.Method, res.Request.URL.RequestURI(), res.StatusCode)
			return nil
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(strings.TrimSuffix(p, "/"), func(w http.ResponseWriter, r *http.Request) {
		loc := p
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, loc, http.StatusMovedPermanently)
	})
	mux.Handle(p, http.StripPrefix(strings.TrimSuffix(p, "/"), proxy))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("prefixproxy: %v", err)
	}
	fmt.Printf("prefixproxy listening on http://%s%s\n", ln.Addr(), p)
	log.Fatal(http.Serve(ln, mux))
}
