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
//	GET  /ws                the run websocket (see ws.go; package run owns its runs and its messages)
//	POST /api/quiz          check a quiz answer (see quizapi.go)
//	GET  /api/quiz/queue    a run: quiz's place in the queue (see quizapi.go)
//	POST /api/predict       store a prediction before its run (see predict.go)
//	GET  /runs              the run archive, newest first (package runspage)
//	GET  /runs/ID           one run's permalink; ID.json and ID.tsv export it
//	GET  /compare           two groups of runs compared (package runspage)
//	/api/rooms/...          a live class: its state, section, polls,
//	                        predictions and board (package liveclass)
//	POST /api/rooms/CODE/share  a result shared to the board, the one
//	                        cross-origin route (package liveclass)
//	/api/share-target       the room servers this one's pages may share to (see share.go)
//	GET  /room/CODE/ws      a room's follower socket (package liveclass)
//	GET  /room/CODE/qr.svg  the room's join URL as a QR code
//	GET  /join              a room's join form; /room/CODE a follower's page,
//	                        /present/CODE the presenter's, /room/CODE/board
//	                        the class board (package liveclass)
//	GET  /classes           past classes; /classes/ID, /classes/compare (package liveclass)
//
// Runs are serialized (package runq): one at a time per server (which
// owns one data directory), others wait in a FIFO queue and are told their
// position; in a room, the presenter's runs go ahead of the followers'
// waiting runs. Two fsync benchmarks running at once would each report the
// other's noise.
//
// Decisions a reader may look for: a rendered lesson page is cached until
// the lessons change (author mode checks file sizes and times on every
// request); a server on a non-loopback address refuses to start without a
// token, and then every run (cells and run: quizzes) must present it;
// requests with an Origin header from another host are refused; without a
// token, runs are refused unless the Host header is localhost or a
// loopback address (DNS rebinding).
//
// Packages beside it: web (templates, Markdown, replies), guard (who
// may use the server, per-address limits, the refusal log), run (a
// reader's run from message to result: the message, the sink, the
// origin check, check → admit → cancel), runq (the disk's one runner:
// jobs, their queue, the budget, recording), runspage (the archive's
// pages: /runs, /runs/ID and its exports, /compare) and liveclass (the live
// class: its registry, API, polls, board, follower socket, pages and
// past classes); grading is package grade's. The /ws socket and the
// room's follower socket are transports over package run: each reader's
// runs are a run.Owner's; a presenter's run asks liveclass.PresenterRun
// (run.Config.Room), whose Run is the job's sink.
//
// Files, one job each:
//
//	doc.go           this overview
//	server.go        Config, Server, New (defaults, routes), ServeHTTP, Close
//	errors.go        sentinel errors, prefixed server:
//	lessons.go       course: loading the lessons, re-reading them in author mode
//	pages.go         GET / and GET /lessons/SLUG: lesson pages and the index, cached
//	static.go        staticFiles: GET /static/, ETags, gzip and the wasm file
//	csp.go           the Content-Security-Policy every response carries
//	access.go        package guard's verdicts on Host and Origin as replies
//	token.go         where the token comes from: -token, -token-file, $KVLAB_TOKEN
//	ws.go            the run websocket's connections: reader, writer; a run.Owner's sink
//	                 (the protocol: package run's doc)
//	cellcheck.go     a run: quiz's lines (runq.CheckLines)
//	owner.go         this server's claim on its run directories under -data
//	os_unix.go       what differs by OS: the owner lock (flock) and "address in use"
//	os_windows.go    the same two for Windows (LockFileEx, WSAEADDRINUSE)
//	record.go        opening the run archive
//	quizapi.go       quizAPI: POST /api/quiz and GET /api/quiz/queue (grading is package grade)
//	quizpredict.go   predictions, graded once: stored before the run that grades them
//	predict.go       POST /api/predict
//	writes.go        bounded writes to the archive: rates, caps per browser and address, body caps
//	share.go         the share targets: the room servers this server's pages may share to
//	main.go          labserver serve: flags, listen, announce, serve
//
// Contexts: a context is passed as the first parameter to whatever works
// on behalf of a request or a run (measure, the runner's runLine, the
// archive's queries, harness.ExecOutput). Four structs also hold one, and
// only as their own lifetime, created with its cancel by whoever creates
// the value and cancelled by its own shutdown path: Server.ctx ends at
// Close and is the parent of everything below; a run.Owner's ends when
// its websocket closes or its follower leaves; runq.Job's ends when the job is cancelled, its client
// goes, or the server closes; runq.Runner's ends at its Close. The runner,
// a writer goroutine and the queue reach those values long after the
// call that created them has returned, so there is no call chain to pass
// the context along; the lifetime travels with the value, as grpc's
// ClientConn keeps its own. No other struct holds one (the rooms' timers
// and sweeper end on Server.ctx's Done channel, liveclass.Config.Done).
package server
