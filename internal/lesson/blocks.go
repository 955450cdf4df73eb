package lesson

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"kvlab/internal/quiz"
)

// blocks parses the lesson's body and collects its special blocks (lab
// cells, quizzes, exercises) in order, then checks that each quiz's cell
// exists and has the lines the quiz reads. The first error ends the walk.
func (l *Lesson) blocks() error {
	doc := NewMarkdown().Parser().Parse(text.NewReader(l.Body))
	p := &blockParser{l: l, quizIDs: map[string]bool{}, cellIDs: map[string]bool{}}
	var err error
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fb, ok := n.(*ast.FencedCodeBlock)
		if !ok || !entering {
			return ast.WalkContinue, nil
		}
		if err = p.block(fb); err != nil {
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return err
	}
	if p.script != "" {
		return fmt.Errorf("line %d: the ```lua mine block has no lab cell after it to run it (-script mine)", p.scriptLine)
	}
	return l.checkQuizCells()
}

// blockParser adds the blocks of one lesson to it, one at a time, and
// remembers the ids taken so far.
type blockParser struct {
	l       *Lesson
	quizIDs map[string]bool // quiz ids seen so far
	cellIDs map[string]bool // lab cell ids seen so far
	// script is the text of a ```lua mine block not yet given to the lab
	// cell after it; scriptLine is its line in the file.
	script     string
	scriptLine int
}

// scriptMineRE finds a run-spec line that runs the reader's own script.
var scriptMineRE = regexp.MustCompile(`(^|\s)-script[ =]+mine(\s|$)`)

// block adds one fenced block when it is a lab, quiz or exercise block
// (others are plain code). The error names the block's line in the file.
func (p *blockParser) block(fb *ast.FencedCodeBlock) error {
	var info string
	if fb.Info != nil {
		info = string(fb.Info.Segment.Value(p.l.Body))
	}
	kind, name := Info(info)
	body := BlockText(fb, p.l.Body)
	line := lineOf(p.l.Body, fb) + p.l.BodyLine - 1
	var err error
	switch kind {
	case "lab", "quiz", "exercise":
		if !closed(fb, p.l.Body) {
			return fmt.Errorf("line %d: the ```%s block is never closed: add a ``` line after its last line (without one, the rest of the file is part of the block)", line, info)
		}
	}
	switch kind {
	case "lab":
		err = p.lab(info, name, body)
	case "quiz":
		err = p.quiz(body)
	case "exercise":
		err = p.exercise(info, name)
	case "lua":
		if name == "mine" {
			if p.script != "" {
				return fmt.Errorf("line %d: a ```lua mine block follows the one on line %d with no lab cell between: put the cell that runs it (-script mine) after each", line, p.scriptLine)
			}
			if strings.TrimSpace(body) == "" {
				return fmt.Errorf("line %d: the ```lua mine block is empty: it holds the script the next cell's -script mine runs", line)
			}
			p.script, p.scriptLine = body, line
		}
	}
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return nil
}

// lab adds a ```lab or ```lab NAME cell; an unnamed cell is cell-N.
func (p *blockParser) lab(info, name, body string) error {
	if len(strings.Fields(info)) > 2 {
		return fmt.Errorf("lab block info %q: want ```lab or ```lab NAME", info)
	}
	c := &Cell{Name: name, Index: len(p.l.Cells), Text: body, Lines: CellLines(body)}
	c.ID = name
	if name == "" {
		c.ID = fmt.Sprintf("cell-%d", c.Index+1)
	} else if !nameRE.MatchString(name) {
		return fmt.Errorf("lab cell name %q: use letters, digits and '-'", name)
	}
	if p.cellIDs[c.ID] {
		return fmt.Errorf("lab cell name %q is used twice in this lesson", c.ID)
	}
	if len(c.Lines) == 0 {
		return fmt.Errorf("lab cell %s has no run-spec lines", c.ID)
	}
	c.Script, p.script = p.script, ""
	if c.Script == "" && slices.ContainsFunc(c.Lines, scriptMineRE.MatchString) {
		return fmt.Errorf("lab cell %s runs -script mine, and no ```lua mine block comes before it: put the script the reader starts from there", c.ID)
	}
	p.cellIDs[c.ID] = true
	p.l.Cells = append(p.l.Cells, c)
	return nil
}

// quiz adds a ```quiz block, parsed by package quiz.
func (p *blockParser) quiz(body string) error {
	q, err := quiz.Parse(body)
	if err != nil {
		return err
	}
	if p.quizIDs[q.ID] {
		return fmt.Errorf("quiz id %q is used twice in this lesson", q.ID)
	}
	p.quizIDs[q.ID] = true
	p.l.Quizzes = append(p.l.Quizzes, q)
	return nil
}

// exercise adds an ```exercise NAME block, NAME one of ExerciseNames.
func (p *blockParser) exercise(info, name string) error {
	if !slices.Contains(ExerciseNames, name) || len(strings.Fields(info)) != 2 {
		return fmt.Errorf("exercise %q: want ```exercise NAME with NAME one of %s", name, strings.Join(ExerciseNames, ", "))
	}
	p.l.Exercises = append(p.l.Exercises, name)
	return nil
}

// checkQuizCells checks that each cell quiz names a lab cell of this
// lesson that has every line its answer reads.
func (l *Lesson) checkQuizCells() error {
	for _, q := range l.Quizzes {
		if q.Cell == "" {
			continue
		}
		c := l.Cell(q.Cell)
		if c == nil {
			return fmt.Errorf("quiz %s: cell %q is not a lab cell of this lesson (cells: %s)", q.ID, q.Cell, strings.Join(l.cellIDs(), ", "))
		}
		if q.Lines() > len(c.Lines) {
			return fmt.Errorf("quiz %s: reads $%d but cell %s has %d line(s)", q.ID, q.Lines()-1, c.ID, len(c.Lines))
		}
	}
	return nil
}
