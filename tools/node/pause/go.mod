module torchjob.invalid/pause

go 1.26
