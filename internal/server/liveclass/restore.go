package liveclass

import (
	"context"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
)

// reloadRooms registers the rooms the archive holds open, with their
// polls and predictions, so a restart mid-class loses nothing.
func (rs *Rooms) reloadRooms() error {
	ctx := context.Background()
	open, err := rs.cfg.Archive.OpenRooms(ctx, time.Now())
	if err != nil {
		return err
	}
	for i := range open {
		ar := &open[i]
		l, err := rs.cfg.Lesson(ar.Lesson)
		if err != nil || l == nil {
			rs.cfg.Log.Printf("room %s: lesson %s is not served; the room is not reopened", classroom.FormatCode(ar.Code), ar.Lesson)
			continue
		}
		room := rs.registerRoom(ar, classroom.Sections(l.Body))
		if room == nil {
			continue
		}
		if err := rs.reloadPolls(ctx, room, l); err != nil {
			return err
		}
		if err := rs.reloadBoard(ctx, room); err != nil {
			return err
		}
	}
	return nil
}

func (rs *Rooms) reloadPolls(ctx context.Context, room *classroom.Room, l *lesson.Lesson) error {
	polls, err := rs.cfg.Archive.RoomPolls(ctx, room.ID)
	if err != nil {
		return err
	}
	room.Lock()
	defer room.Unlock()
	for _, ap := range polls {
		room.Polls = append(room.Polls, restorePoll(ap, l.Quiz(ap.Quiz)))
	}
	return nil
}

// restorePoll makes a poll of an archived one, its predictions included.
// q gives the question and unit; nil (the lesson no longer has the quiz)
// leaves them empty.
func restorePoll(ap archive.Poll, q *quiz.Quiz) *classroom.Poll {
	question, unit := "", ""
	if q != nil {
		question, unit = q.Question, q.Unit
	}
	p := classroom.NewPoll(ap.Key, ap.Quiz, question, unit, ap.Opened)
	p.ArchID = ap.ID
	if !ap.MeasureStarted.IsZero() {
		p.StartMeasuring(ap.MeasureStarted)
	}
	if ap.Measured != nil {
		p.Finish(*ap.Measured, ap.RunID, ap.Busy)
	}
	for _, pr := range ap.Predictions {
		p.Restore(pr.Browser, pr.Value)
	}
	return p
}

func (rs *Rooms) reloadBoard(ctx context.Context, room *classroom.Room) error {
	es, err := rs.cfg.Archive.BoardEntries(ctx, room.ID)
	if err != nil {
		return err
	}
	room.Lock()
	defer room.Unlock()
	for _, e := range es {
		room.BoardEntries++
		room.BoardByAddr[e.AddrHash]++
	}
	return nil
}
