// Prints Go's own time.Parse errors for the test vectors of tests/sim/apiserver/apimachinery/test_gotime.py (standard library only).
module lwsconf.local/tests/gotime

go 1.26.0
