"""Source files: the public TLC and NOAA formats, the downloader and the sample source."""
