"""The image-captioning family (Xu et al., 2015, "Show, Attend and Tell"): a pretrained
EfficientNet-Lite0 encoder (`lite0`), image decoding (`images`) and caption files (`captions`)."""
