// Package web holds the browser UI, embedded into the server binary.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Assets returns the UI's files, rooted at the site's root.
func Assets() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded at build time; it cannot be missing
	}
	return sub
}
