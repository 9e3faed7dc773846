module gotime
go 1.26
