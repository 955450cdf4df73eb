package classroom

import (
	"bufio"
	"bytes"
	"strings"
)

// Sections counts a lesson body's sections: the part before the first
// "## " heading is section 0, and each "## " heading starts the next.
// Headings inside fenced code blocks do not count.
func Sections(body []byte) int {
	n := 1
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " ")
		switch {
		case fence != "":
			if strings.HasPrefix(line, fence) {
				fence = ""
			}
		case strings.HasPrefix(line, "```"):
			fence = "```"
		case strings.HasPrefix(line, "~~~"):
			fence = "~~~"
		case strings.HasPrefix(line, "## ") || line == "##":
			n++
		}
	}
	return n
}
