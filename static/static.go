// Package static holds the files labserver serves under /static/: the
// page's CSS and JavaScript, icons, and the wasm/ folder that `make wasm`
// fills with the in-browser Go interpreter.
package static

import "embed"

// FS holds the static files, at their paths relative to this folder.
//
//go:embed *.css *.js *.svg wasm room
var FS embed.FS
