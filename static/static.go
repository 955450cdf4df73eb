// Package static holds the files labserver serves under /static/: the
// page's CSS and JavaScript, icons, and the wasm/ folder that `make wasm`
// fills with the in-browser Go interpreter.
//
// The JavaScript is native ES modules, served as they are (no build step,
// no npm): app.js wires dom.js, charts.js, results.js, cells.js,
// quizzes.js, session.js and page.js; exercise.js is loaded on its own by
// the pages that have an exercise, and starts exercise-worker.js. theme.js
// is a plain script that runs before the page paints. package.json only
// tells Node that the .js files here are modules, for the tests in
// testdata/ (node_test.go runs them); it is not served. browser_test.go
// draws results in headless Chromium with results.js alone.
package static

import "embed"

// FS holds the static files, at their paths relative to this folder.
//
//go:embed *.css *.js *.svg wasm room
var FS embed.FS
