package syncfile

func chunkSize() int { return chunk }
