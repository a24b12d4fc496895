package ws

// Parks returns how many times a stream's loop has waited for output.
func (h *Hub) Parks() int64 { return h.parks.Load() }
