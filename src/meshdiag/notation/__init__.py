"""One parser/printer per way a sharding or mesh is written: GSPMD (`gspmd.py`, V3 named
form `gspmd_v3.py`), Shardy (`shardy.py`), PartitionSpec (`pspec.py`), mesh text
(`meshtext.py`), TTNN mappers (`ttnn.py`), device lists (`devicelist.py`), byte sizes
(`byte_size.py`); `detect.py` tells them apart, `convert.py` goes from one to another.
Text -> model and model -> text only."""
