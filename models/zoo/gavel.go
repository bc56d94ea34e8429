package zoo

import "fmt"

// GavelTemplate is one of Gavel's 26 job templates (stanford-futuredata/gavel,
// scheduler/job_table.py; facts only): a model at a batch size, the task and
// dataset it trains, the command Gavel's physical cluster runs for it (%s
// stands for the data directory) and whether it may run on several GPUs.
//
// Gavel's templates carry no CPU or memory sensitivity: they are not Synergy
// models (All) and take no part in Synergy's generator. Their speed per GPU
// type is in Gavel's throughputs file, which this package does not read
// (scheduler/gavel does, and its generator draws these templates).
type GavelTemplate struct {
	// Name is Gavel's job type, "ResNet-18 (batch size 64)" (A3C and
	// CycleGAN: the bare model name), the key of its throughputs file.
	Name string `json:"name"`
	// Model is the model without the batch ("ResNet-18"); Batch the batch
	// size (0 where Gavel names none).
	Model        string `json:"model"`
	Batch        int    `json:"batch,omitempty"`
	Task         string `json:"task"`
	Command      string `json:"command"`
	WorkingDir   string `json:"working_dir"`
	NumStepsArg  string `json:"num_steps_arg"`
	NeedsDataDir bool   `json:"needs_data_dir"`
	Distributed  bool   `json:"distributed"`
}

// GavelTemplates returns Gavel's job table in Gavel's order (its generator
// draws a template by index, so the order is part of the data). Each call
// returns fresh values.
func GavelTemplates() []GavelTemplate {
	var ts []GavelTemplate
	add := func(model string, batch int, task, cmd, wd, arg string, data, dist bool) {
		name := model
		if batch > 0 {
			name = fmt.Sprintf("%s (batch size %d)", model, batch)
		}
		ts = append(ts, GavelTemplate{Name: name, Model: model, Batch: batch, Task: task, Command: cmd, WorkingDir: wd,
			NumStepsArg: arg, NeedsDataDir: data, Distributed: dist})
	}
	for _, bs := range []int{16, 32, 64, 128, 256} {
		add("ResNet-18", bs, "image classification, CIFAR-10", fmt.Sprintf("python3 main.py --data_dir=%%s/cifar10 --batch_size %d", bs),
			"image_classification/cifar10", "--num_steps", true, true)
	}
	for _, bs := range []int{16, 32, 64, 128} {
		add("ResNet-50", bs, "image classification, ImageNet", fmt.Sprintf("python3 main.py -j 8 -a resnet50 -b %d %%s/imagenet/", bs),
			"image_classification/imagenet", "--num_minibatches", true, true)
	}
	for _, bs := range []int{16, 32, 64, 128, 256} {
		add("Transformer", bs, "translation, Multi30k",
			fmt.Sprintf("python3 train.py -data %%s/translation/multi30k.atok.low.pt -batch_size %d -proj_share_weight", bs),
			"translation", "-step", true, true)
	}
	for _, bs := range []int{5, 10, 20, 40, 80} {
		add("LM", bs, "language modelling (LSTM), Wikitext-2", fmt.Sprintf("python main.py --cuda --data %%s/wikitext2 --batch_size %d", bs),
			"language_modeling", "--steps", true, true)
	}
	for _, bs := range []int{512, 1024, 2048, 4096, 8192} {
		add("Recommendation", bs, "recommendation (autoencoder), ML-20M", fmt.Sprintf("python3 train.py --data_dir %%s/ml-20m/pro_sg/ --batch_size %d", bs),
			"recommendation", "-n", true, false)
	}
	add("A3C", 0, "reinforcement learning, Pong", "python3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True", "rl", "--max-steps", false, false)
	add("CycleGAN", 0, "image-to-image translation, monet2photo", "python3 cyclegan.py --dataset_path %s/monet2photo --decay_epoch 0", "cyclegan", "--n_steps", true, false)
	return ts
}
