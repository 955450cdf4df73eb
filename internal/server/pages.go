package server

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"kvlab/internal/lesson"
	"kvlab/internal/server/web"
)

func (c *course) handleIndex(w http.ResponseWriter, r *http.Request) {
	ls, err := c.now()
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	page, err := c.cachedPage("", func() ([]byte, error) { return c.renderIndex(ls) })
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Rendering the index failed", err.Error())
		return
	}
	web.WriteHTML(w, page)
}

// cachedPage returns the page cached under key ("" for the index, else the
// lesson's slug), rendering and caching it first when reload dropped it.
func (c *course) cachedPage(key string, render func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	page, ok := c.pages[key]
	c.mu.Unlock()
	if ok {
		return page, nil
	}
	page, err := render()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.pages[key] = page
	c.mu.Unlock()
	return page, nil
}

func (c *course) handleLesson(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	if !lesson.IsSlug(slug) {
		web.ErrorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("%q is not a lesson name (lowercase letters, digits and '-').", slug))
		return
	}
	l, i, ls, err := c.find(slug)
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	if l == nil {
		web.ErrorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("There is no lesson %q.", slug))
		return
	}
	page, err := c.cachedPage(slug, func() ([]byte, error) { return c.renderLesson(l, i, ls) })
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Rendering the lesson failed", err.Error())
		return
	}
	web.WriteHTML(w, page)
}

type navLink struct {
	Slug, Title string
	Order       int
}

type lessonPage struct {
	Lesson      *lesson.Lesson
	Body        template.HTML
	TOC         []web.TOCEntry
	Prev, Next  *navLink
	Number      int
	Total       int
	NeedToken   bool
	HasExercise bool
	CellIDs     string
	QuizIDs     string
	ShowTitle   bool // the body has no H1 of its own
}

func (c *course) renderLesson(l *lesson.Lesson, i int, all []*lesson.Lesson) ([]byte, error) {
	body, toc, h1, err := web.RenderBody(l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.File, err)
	}
	p := lessonPage{Lesson: l, Body: body, TOC: toc, Number: i + 1, Total: len(all),
		NeedToken: c.needToken, HasExercise: len(l.Exercises) > 0, ShowTitle: h1 == ""}
	if i > 0 {
		p.Prev = &navLink{Slug: all[i-1].Slug, Title: all[i-1].Title, Order: i}
	}
	if i+1 < len(all) {
		p.Next = &navLink{Slug: all[i+1].Slug, Title: all[i+1].Title, Order: i + 2}
	}
	p.CellIDs, p.QuizIDs = blockIDs(l)
	var b bytes.Buffer
	if err := web.Execute(&b, "lesson.html", p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blockIDs lists a lesson's cell IDs and quiz IDs, space separated, for
// the page script that shows progress.
func blockIDs(l *lesson.Lesson) (cells, quizzes string) {
	var c, q []string
	for _, cell := range l.Cells {
		c = append(c, cell.ID)
	}
	for _, quiz := range l.Quizzes {
		q = append(q, quiz.ID)
	}
	return strings.Join(c, " "), strings.Join(q, " ")
}

type indexEntry struct {
	*lesson.Lesson
	Number      int
	CellIDs     string
	QuizIDs     string
	ExerciseIDs string // the exercise names, space separated: passed ones count as progress
}

func (c *course) renderIndex(all []*lesson.Lesson) ([]byte, error) {
	var entries []indexEntry
	for i, l := range all {
		e := indexEntry{Lesson: l, Number: i + 1, ExerciseIDs: strings.Join(l.Exercises, " ")}
		e.CellIDs, e.QuizIDs = blockIDs(l)
		entries = append(entries, e)
	}
	var b bytes.Buffer
	err := web.Execute(&b, "index.html", struct {
		Lessons   []indexEntry
		NeedToken bool
	}{entries, c.needToken})
	return b.Bytes(), err
}
