// Package web is what every page and JSON route of labserver's server
// shares: the page templates (one set, with the layout partials every page
// includes), the course's Markdown rendering (lesson bodies, their cells and
// quizzes, highlighted code, one-line texts) and the few ways a handler
// replies: a page, an error page, a JSON value or a JSON error, and a
// JSON body decoded within its size.
//
// It knows nothing of who asks (package guard decides that) nor of runs:
// a handler gathers its data and hands it to Execute or RenderPage.
//
// Files:
//
//	templates/      the page templates; layout.html and room_layout.html are the partials
//	reply.go        templates, pages, error pages, JSON replies and bodies
//	markdown.go     Markdown to HTML: lesson bodies, inline texts, code highlighting
//	sourceref.go    inline code: commands kept whole per word, source references linked to /source/, the source pages
package web
