package archive

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestRooms: a room, its polls with predictions (the later replacing the
// earlier) and its board come back as stored; OpenRooms leaves out the
// closed and the expired; a reopened archive still has them.
func TestRooms(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		a := open(t, target, dir)
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		live := &Room{Code: "ABCDEFGHJK", Lesson: "04-the-fsync-tax", Created: now, Expires: now.Add(4 * time.Hour)}
		gone := &Room{Code: "ZZZZZZZZZZ", Lesson: "04-the-fsync-tax", Created: now, Expires: now.Add(-time.Minute)}
		shut := &Room{Code: "YYYYYYYYYY", Lesson: "04-the-fsync-tax", Created: now, Expires: now.Add(time.Hour), Closed: now}
		for _, r := range []*Room{live, gone, shut} {
			if _, err := a.AddRoom(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		live.Section, live.AllowRuns = 3, true
		if err := a.UpdateRoom(ctx, live); err != nil {
			t.Fatal(err)
		}
		p := &Poll{Room: live.ID, Key: "p1", Quiz: "always-vs-batch", Opened: now}
		if _, err := a.AddPoll(ctx, p); err != nil {
			t.Fatal(err)
		}
		for _, pr := range []*RoomPrediction{
			{Poll: p.ID, Browser: "b1", Value: 10, At: now},
			{Poll: p.ID, Browser: "b2", Value: 20, At: now.Add(time.Second)},
			{Poll: p.ID, Browser: "b1", Value: 12.5, At: now.Add(2 * time.Second)},
		} {
			if err := a.PutRoomPrediction(ctx, pr); err != nil {
				t.Fatal(err)
			}
		}
		m := 42.5
		p.MeasureStarted, p.Measured, p.RunID, p.Busy = now.Add(time.Minute), &m, 7, "another program was writing to the disk"
		if err := a.UpdatePoll(ctx, p); err != nil {
			t.Fatal(err)
		}
		e := &BoardEntry{Room: live.ID, At: now, Kind: "probe", Measures: map[string]float64{"fdatasync_p50": 210000},
			Conditions: json.RawMessage(`{"fs":"ext4","rotational":true}`),
			Result:     json.RawMessage(`{"kind":"probe"}`), Label: "lab 3", AddrHash: "ab12"}
		if _, err := a.AddBoardEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		gone2 := &BoardEntry{Room: live.ID, At: now, Kind: "probe", Measures: map[string]float64{"fdatasync_p50": 1}, Result: json.RawMessage(`{}`)}
		if _, err := a.AddBoardEntry(ctx, gone2); err != nil {
			t.Fatal(err)
		}
		if err := a.DeleteBoardEntry(ctx, live.ID, gone2.ID); err != nil {
			t.Fatal(err)
		}
		if err := a.DeleteBoardEntry(ctx, live.ID, gone2.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting it again: got %v, want ErrNotFound", err)
		}
		if err := a.DeleteBoardEntry(ctx, shut.ID, e.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting an entry through another room: got %v, want ErrNotFound", err)
		}
		a.Close()
		a = open(t, target, dir)

		open, err := a.OpenRooms(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(open) != 1 || open[0].Code != live.Code || open[0].Section != 3 || !open[0].AllowRuns || !open[0].Expires.Equal(live.Expires) {
			t.Fatalf("OpenRooms: got %+v, want only %s at section 3 with runs allowed", open, live.Code)
		}
		all, err := a.Rooms(ctx, 0)
		if err != nil || len(all) != 3 || all[0].ID != shut.ID {
			t.Fatalf("Rooms: got %+v (%v), want 3, newest first", all, err)
		}
		polls, err := a.RoomPolls(ctx, live.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(polls) != 1 || polls[0].Measured == nil || *polls[0].Measured != 42.5 || polls[0].RunID != 7 || !polls[0].MeasureStarted.Equal(p.MeasureStarted) || polls[0].Busy != p.Busy {
			t.Fatalf("RoomPolls: got %+v, want p1 measured 42.5 by run 7 on a busy machine", polls)
		}
		preds := polls[0].Predictions
		if len(preds) != 2 || preds[0].Browser != "b2" || preds[1].Browser != "b1" || preds[1].Value != 12.5 {
			t.Fatalf("predictions: got %+v, want b2=20 then b1=12.5 (replaced)", preds)
		}
		board, err := a.BoardEntries(ctx, live.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(board) != 1 || board[0].Measures["fdatasync_p50"] != 210000 || board[0].Label != "lab 3" || board[0].Result != nil ||
			string(board[0].Conditions) != `{"fs":"ext4","rotational":true}` {
			t.Fatalf("BoardEntries: got %+v, want the one entry with its conditions and without its result", board)
		}
		if res, err := a.BoardResult(ctx, live.ID, e.ID); err != nil || string(res) != `{"kind":"probe"}` {
			t.Fatalf("BoardResult: got %s, %v", res, err)
		}
		// An entry stored before its conditions were kept comes with its result.
		rawExec(t, a, `UPDATE board_entries SET conditions = '', result = '{"kind":"probe"}'`)
		rawExec(t, a, `DELETE FROM board_results`)
		if board, err := a.BoardEntries(ctx, live.ID); err != nil || len(board) != 1 || board[0].Conditions != nil || string(board[0].Result) != `{"kind":"probe"}` {
			t.Fatalf("BoardEntries of an entry without conditions: got %+v, %v; want its result", board, err)
		}
		if _, err := a.GetRoom(ctx, 999999); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetRoom(999999): got %v, want ErrNotFound", err)
		}
	})
}

// TestRoomsRefuseBadRows: rows no page could show are refused.
func TestRoomsRefuseBadRows(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		if _, err := a.AddRoom(ctx, &Room{Lesson: "x"}); err == nil {
			t.Error("a room without a code was stored")
		}
		if _, err := a.AddPoll(ctx, &Poll{Key: "p1", Quiz: "q"}); err == nil {
			t.Error("a poll without a room was stored")
		}
		if err := a.PutRoomPrediction(ctx, &RoomPrediction{Poll: 1}); err == nil {
			t.Error("a prediction without a browser was stored")
		}
		if _, err := a.AddBoardEntry(ctx, &BoardEntry{Room: 1, Kind: "probe", Result: json.RawMessage(`{`)}); err == nil {
			t.Error("a board entry with broken JSON was stored")
		}
	})
}
