package liveclass

import (
	"testing"

	"kvlab/internal/apidoc"
)

// wireTypes are zero values of the room's JSON requests, replies and
// messages: docs/api.md must name each of their fields.
var wireTypes = []any{
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

// TestAPIDoc fails when a JSON field of the room's wire exists in the
// code but docs/api.md does not name it as `name`.
func TestAPIDoc(t *testing.T) {
	apidoc.Check(t, "../../../docs/api.md", 20, wireTypes...)
}
