"""The warm start: demonstrations (`demos`), supervised fine-tuning on them (`sft`), the shared warm-start
folder (`warm_start`) and its evaluation, computed once (`warm_eval`)."""
