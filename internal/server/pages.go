package server

import (
	"fmt"
	"net/http"

	"kvlab/internal/lesson"
)

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	ls, err := s.lessonsNow()
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	page, err := s.cachedPage("", func() ([]byte, error) { return s.renderIndex(ls) })
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Rendering the index failed", err.Error())
		return
	}
	writeHTML(w, page)
}

// cachedPage returns the page cached under key ("" for the index, else the
// lesson's slug), rendering and caching it first when reload dropped it.
func (s *Server) cachedPage(key string, render func() ([]byte, error)) ([]byte, error) {
	s.mu.Lock()
	page, ok := s.pages[key]
	s.mu.Unlock()
	if ok {
		return page, nil
	}
	page, err := render()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.pages[key] = page
	s.mu.Unlock()
	return page, nil
}

func (s *Server) handleLesson(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	if !lesson.IsSlug(slug) {
		s.errorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("%q is not a lesson name (lowercase letters, digits and '-').", slug))
		return
	}
	l, i, ls, err := s.findLesson(slug)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	if l == nil {
		s.errorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("There is no lesson %q.", slug))
		return
	}
	page, err := s.cachedPage(slug, func() ([]byte, error) { return s.renderLesson(l, i, ls) })
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Rendering the lesson failed", err.Error())
		return
	}
	writeHTML(w, page)
}

func writeHTML(w http.ResponseWriter, page []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(page)
}
