package liveclass

// WireTypes are zero values of the room's JSON requests, replies and
// messages: docs/api.md must name each of their fields (the server's
// apidoc test walks them, with its own).
func WireTypes() []any {
	return []any{
		roomCreateReply{},
		roomMsg{},
		pollMsg{},
		roomRunMsg{},
		sectionMsg{},
		predictRoomRequest{},
		predictRoomReply{},
		shareRequest{},
		boardReply{},
		tokenRequest{},
	}
}
