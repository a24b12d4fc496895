// Package web holds the browser UI, embedded into the server binary.
//
// The UI is built (cd web && npm ci && npm run build, or make web) into
// dist/; without a build, the fallback page in static/ says how to build.
package web

import (
	"embed"
	"io/fs"
)

// dist is the built UI; its .gitkeep keeps the directory, and so this
// embed, valid before any build.
//
//go:embed all:dist static
var files embed.FS

// Assets returns the UI's files, rooted at the site's root: the build when
// there is one, else the fallback page.
func Assets() fs.FS {
	dir := "static"
	if _, err := fs.Stat(files, "dist/index.html"); err == nil {
		dir = "dist"
	}
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // both directories are embedded at build time
	}
	return sub
}

// Built reports whether the binary carries a UI build.
func Built() bool {
	_, err := fs.Stat(files, "dist/index.html")
	return err == nil
}
