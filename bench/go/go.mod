module yieldloop-bench/go

go 1.19
