"""MXL8xx: distributed training (parameter-server launches, kvstore and Trainer options, data
split across workers, Horovod)."""
