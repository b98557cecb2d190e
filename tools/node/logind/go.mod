module torchjob.invalid/logind

go 1.26

require github.com/godbus/dbus/v5 v5.2.2
