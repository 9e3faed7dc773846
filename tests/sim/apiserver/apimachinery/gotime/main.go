package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	var values []string
	json.NewDecoder(os.Stdin).Decode(&values)
	out := map[string][2]string{}
	for _, v := range values {
		var r [2]string
		for i, layout := range []string{time.RFC3339, "2006-01-02T15:04:05.000000Z07:00"} {
			if _, err := time.Parse(layout, v); err != nil {
				r[i] = err.Error()
			}
		}
		out[v] = r
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
