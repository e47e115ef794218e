module example.invalid/cairn-go-example

go 1.18
