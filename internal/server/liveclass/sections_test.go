package liveclass

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

// A follower's page has no Run button: no lesson tells a follower to
// press Run, or that a cell stays locked until they answer; the same
// sentences stay on the presenter's page, where they are true.
func TestFollowersAreNotToldToRun(t *testing.T) {
	ls, err := lesson.Load(lessons.FS)
	if err != nil {
		t.Fatal(err)
	}
	solo := regexp.MustCompile(`Press <strong>Run</strong>|Shift\+Enter in the cell|stays locked|[Bb]efore you run`)
	rewrote := 0
	for _, l := range ls {
		body, _, err := renderSections(l)
		if err != nil {
			t.Fatalf("%s: %v", l.File, err)
		}
		rewrote += len(solo.FindAllString(string(body), -1))
		if m := solo.FindString(string(forFollowers(body))); m != "" {
			t.Errorf("%s: a follower's page says %q", l.File, m)
		}
	}
	if rewrote == 0 {
		t.Error("no lesson tells its reader to press Run: the test shows nothing")
	}
}
