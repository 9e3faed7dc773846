// Our pause program: PID 1 of every pod sandbox on a real node (`lwsconf.realnodes.images`).
module lwsconf.local/nodes/pause

go 1.26.0
