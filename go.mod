module github.com/synergy-sched/synergy

go 1.26.8
