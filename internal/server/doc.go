// Package server is labserver's web side: it renders the course's lessons
// as notebook pages, runs their lab cells over a websocket, and checks
// quiz answers against measurements taken on this machine.
//
// Routes:
//
//	GET  /                  the index: lessons with the browser's progress
//	GET  /lessons/SLUG      one lesson
//	GET  /static/PATH       embedded CSS, JS, SVG and the wasm folder
//	GET  /static/chroma.css code highlighting, light and dark
//	GET  /ws                the run websocket (see messages.go)
//	POST /api/quiz          check a quiz answer (see quizapi.go)
//	GET  /api/quiz/queue    a run: quiz's place in the queue (see quizapi.go)
//	POST /api/predict       store a prediction before its run (see predict.go)
//	GET  /runs              the run archive, newest first (see runs.go)
//	GET  /runs/ID           one run's permalink; ID.json and ID.tsv export it
//	GET  /compare           two groups of runs compared (see runs.go)
//	/api/rooms/...          a live class: its state, section, polls,
//	                        predictions and board (see room_api.go)
//	POST /api/rooms/CODE/share  a result shared to the board, the one
//	                        cross-origin route (see share.go)
//	/api/share-target       the room servers this one's pages may share to
//	GET  /room/CODE/ws      a room's follower socket (see room_ws.go)
//	GET  /room/CODE/qr.svg  the room's join URL as a QR code
//	GET  /join              a room's join form; /room/CODE a follower's page,
//	                        /present/CODE the presenter's, /room/CODE/board
//	                        the class board (see room_pages.go)
//	GET  /classes           past classes; /classes/ID, /classes/compare (see room_classes.go)
//
// Runs are serialized: one at a time per server (which owns one data
// directory), others wait in a FIFO queue and are told their position;
// in a room, the presenter's runs go ahead of the followers' waiting runs.
// Two fsync benchmarks running at once would each report the other's noise.
//
// Decisions a reader may look for: a rendered lesson page is cached until
// the lessons change (author mode checks file sizes and times on every
// request); a server on a non-loopback address refuses to start without a
// token, and then every run (cells and run: quizzes) must present it;
// requests with an Origin header from another host are refused; without a
// token, runs are refused unless the Host header is localhost or a
// loopback address (DNS rebinding).
package server
