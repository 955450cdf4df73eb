package room

import (
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/lessons"
)

// The page's sections are the room API's: for every lesson of the
// course (and the fixture), the page wraps as many sections as the room
// lets the presenter move through, numbered 0..n-1 in order.
func TestRoomSectionsAgreeWithTheRoom(t *testing.T) {
	for _, fsys := range []fs.FS{lessons.FS, os.DirFS("../testdata/lessons")} {
		ls, err := lesson.Load(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			body, secs, err := renderSections(l)
			if err != nil {
				t.Fatalf("%s: %v", l.File, err)
			}
			want := classroom.Sections(l.Body)
			got := regexp.MustCompile(`<section class="room-section" data-section="(\d+)"`).FindAllStringSubmatch(string(body), -1)
			if len(got) != want || len(secs) != want {
				t.Errorf("%s: the page has %d sections (%d titles), the room %d", l.File, len(got), len(secs), want)
				continue
			}
			for i, m := range got {
				if m[1] != strconv.Itoa(i) {
					t.Errorf("%s: section %d is numbered %s", l.File, i, m[1])
				}
			}
			if opened, closed := strings.Count(string(body), "<section "), strings.Count(string(body), "</section>"); opened != closed {
				t.Errorf("%s: %d sections opened, %d closed", l.File, opened, closed)
			}
		}
	}
}
